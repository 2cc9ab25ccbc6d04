# Outside: a POSIX message queue of the launcher's with a message in it; the confined process opens it
# read-only (Landlock checks only write opens), takes the message, registers mq_notify, unlinks it,
# and makes a queue of its own that outlives it.
import time
from common import *
libc.mq_open.restype = ctypes.c_int
for n in (b"/kopt-review32", b"/kopt-review32-planted"): libc.mq_unlink(n)
q = libc.mq_open(b"/kopt-review32", os.O_CREAT | os.O_RDWR | os.O_NONBLOCK, 0o600, None)
assert q >= 0
assert libc.mq_send(q, b"judge's message", 15, 0) == 0
print("[outside] queue /kopt-review32 made, one message sent; /dev/mqueue not mounted here:", not os.path.exists("/dev/mqueue/kopt-review32"), flush=True)
p = confined("d_mq_inside.py", wait=False)
time.sleep(3)
buf = ctypes.create_string_buffer(8192)
n = libc.mq_receive(q, buf, 8192, None)
print("[outside] mq_receive on its own queue while attacker lives:", repr(buf.raw[:n]) if n >= 0 else f"nothing ({os.strerror(ctypes.get_errno())})", flush=True)
class Sigevent(ctypes.Structure): _fields_ = [("pad", ctypes.c_char * 64)]
ev = Sigevent(); ctypes.memmove(ctypes.addressof(ev) + 12, ctypes.byref(ctypes.c_int(1)), 4)  # sigev_notify=SIGEV_NONE
r = libc.mq_notify(q, ctypes.byref(ev))
print("[outside] mq_notify on its own queue:", "ok" if r == 0 else os.strerror(ctypes.get_errno()), flush=True)
print("[outside] attacker rc", p.wait())
r = libc.mq_open(b"/kopt-review32", os.O_RDWR, 0o600, None)
print("[outside] after: reopen /kopt-review32 by name:", "exists" if r >= 0 else os.strerror(ctypes.get_errno()))
r = libc.mq_open(b"/kopt-review32-planted", os.O_RDONLY, 0o600, None)
print("[outside] after: the attacker's /kopt-review32-planted:", "exists, outlived the attacker" if r >= 0 else os.strerror(ctypes.get_errno()))
libc.mq_unlink(b"/kopt-review32-planted")
