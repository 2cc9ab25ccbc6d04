import time
from inside_common import *
n = 0
while libc.inotify_init1(0) >= 0: n += 1
print(f"[inside] made {n} inotify instances, then: {os.strerror(ctypes.get_errno())}", flush=True)
time.sleep(5)
