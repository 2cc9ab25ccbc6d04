import time
from inside_common import *
libc.mq_open.restype = ctypes.c_int
r = libc.mq_open(b"/kopt-review32", os.O_WRONLY | os.O_NONBLOCK, 0, None)
print("[inside] mq_open(/kopt-review32, O_WRONLY):", r if r >= 0 else os.strerror(ctypes.get_errno()), flush=True)
q = libc.mq_open(b"/kopt-review32", os.O_RDONLY | os.O_NONBLOCK, 0, None)
print("[inside] mq_open(/kopt-review32, O_RDONLY):", q, flush=True)
buf = ctypes.create_string_buffer(8192)
n = libc.mq_receive(q, buf, 8192, None)
print("[inside] mq_receive:", repr(buf.raw[:n]) if n >= 0 else os.strerror(ctypes.get_errno()), flush=True)
class Sigevent(ctypes.Structure): _fields_ = [("pad", ctypes.c_char * 64)]
ev = Sigevent(); ctypes.memmove(ctypes.addressof(ev) + 12, ctypes.byref(ctypes.c_int(1)), 4)
print("[inside] mq_notify(SIGEV_NONE):", "ok" if libc.mq_notify(q, ctypes.byref(ev)) == 0 else os.strerror(ctypes.get_errno()), flush=True)
time.sleep(4)
print("[inside] mq_unlink(/kopt-review32):", "ok" if libc.mq_unlink(b"/kopt-review32") == 0 else os.strerror(ctypes.get_errno()), flush=True)
r = libc.mq_open(b"/kopt-review32-planted", os.O_CREAT | os.O_RDONLY, 0o666, None)
print("[inside] mq_open(/kopt-review32-planted, O_CREAT|O_RDONLY):", r if r >= 0 else os.strerror(ctypes.get_errno()), flush=True)
