# Outside: the confined process takes every inotify instance root's uid may have (max_user_instances,
# per uid); a process of the same uid outside then tries to make one.
import time
from common import *
print("[outside] max_user_instances", open("/proc/sys/fs/inotify/max_user_instances").read().strip(), flush=True)
p = confined("l_inotify_inside.py", wait=False)
time.sleep(3)
fd = libc.inotify_init1(0)
print("[outside] inotify_init1 while the attacker lives:", fd if fd >= 0 else os.strerror(ctypes.get_errno()), flush=True)
if fd >= 0: os.close(fd)
p.wait()
fd = libc.inotify_init1(0)
print("[outside] after it exits:", fd if fd >= 0 else os.strerror(ctypes.get_errno()))
