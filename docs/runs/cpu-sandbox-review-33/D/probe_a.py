"""Probes of filter rule (a) from inside the sandbox; prints one line each."""
import ctypes, os, fcntl, signal, struct, errno, time
libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    return r, (os.strerror(ctypes.get_errno()) if r < 0 else "")
victim = int(os.environ["VICTIM"])
# fanotify_init (x86_64 300): unprivileged since 5.13 with FAN_REPORT_FID; per-uid limit 128 groups
FAN_CLASS_NOTIF, FAN_REPORT_FID = 0, 0x200
fds = []
for i in range(200):
    r, e = sc(300, FAN_CLASS_NOTIF | FAN_REPORT_FID, os.O_RDONLY)
    if r < 0: break
    fds.append(r)
print(f"fanotify_init: {len(fds)} groups made, then: {e or 'ok'}")
# a mark on a file outside (inode mark: allowed unprivileged)
if fds:
    FAN_MARK_ADD, FAN_MODIFY, FAN_ACCESS, FAN_OPEN = 1, 2, 1, 0x20
    libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
    r = libc.fanotify_mark(fds[0], FAN_MARK_ADD, FAN_MODIFY | FAN_OPEN | FAN_ACCESS, -100, b"/tmp/review33/D/outside.txt")
    print("fanotify_mark on outside file:", r, os.strerror(ctypes.get_errno()) if r else "ok")
    time.sleep(1.5)  # the outside process opens/writes it meanwhile
    os.set_blocking(fds[0], False)
    try:
        data = os.read(fds[0], 4096); print(f"fanotify events read: {len(data)} bytes (outside activity seen)")
    except BlockingIOError:
        print("fanotify: no event")
open("/tmp/review33/D/scratch/fan_done", "w").close()
# dnotify: F_NOTIFY on a directory outside, signal to the owner (F_SETOWN = victim outside)
try:
    d = os.open("/tmp/review33/D/watched", os.O_RDONLY)
    F_NOTIFY, DN_MODIFY, DN_CREATE, DN_MULTISHOT, F_SETSIG = 1026, 2, 4, 0x80000000, 10
    fcntl.fcntl(d, F_SETSIG, signal.SIGUSR1)
    fcntl.fcntl(d, fcntl.F_SETOWN, victim)
    fcntl.fcntl(d, F_NOTIFY, DN_MODIFY | DN_CREATE | DN_MULTISHOT)
    print("F_NOTIFY on outside dir with owner=victim: set")
except OSError as e:
    print("F_NOTIFY:", e)
# F_SETOWN + O_ASYNC on its own pipe, owner = victim outside, then make I/O ready
r, w = os.pipe()
try:
    fcntl.fcntl(r, fcntl.F_SETOWN, victim); fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)
    os.write(w, b"x"); print("F_SETOWN(victim)+O_ASYNC pipe: written")
except OSError as e:
    print("F_SETOWN/O_ASYNC:", e)
# F_SETOWN_EX to the victim's process group
try:
    fcntl.fcntl(r, 15, struct.pack("ii", 2, os.getpgid(victim)))  # F_SETOWN_EX, F_OWNER_PGRP
    os.write(w, b"y"); print("F_SETOWN_EX(pgrp)+O_ASYNC: written")
except OSError as e:
    print("F_SETOWN_EX:", e)
# /proc/keys
try:
    print("/proc/keys:", repr(open("/proc/keys").read()[:300]))
except OSError as e:
    print("/proc/keys:", e)
# /dev/mqueue by path
try:
    print("/dev/mqueue listing:", os.listdir("/dev/mqueue"))
except OSError as e:
    print("/dev/mqueue:", e)
for p in ("/dev/mqueue/kopt_review33",):
    try:
        fd = os.open(p, os.O_RDONLY); print("open mq by path read-only:", repr(os.read(fd, 200)))
    except OSError as e:
        print("open mq by path:", e)
    try:
        fd = os.open(p, os.O_RDWR); print("open mq by path rw: OK")
    except OSError as e:
        print("open mq by path rw:", e)
    try:
        os.unlink(p); print("unlink mq by path: OK")
    except OSError as e:
        print("unlink mq by path:", e)
# clone variants
for name, nr, flags in (("vfork", 58, None), ("fork", 57, None), ("clone NEWUSER", 56, 0x10000000|17), ("clone3", 435, None)):
    if flags is None and nr != 435:
        pid = os.fork()
        if pid == 0: os._exit(0)
        os.waitpid(pid, 0); print(f"{name}: ok (no namespace)"); continue
    r, e = sc(nr, flags or 0, 0)
    if r == 0: os._exit(0)
    if r > 0: os.waitpid(r, 0)
    print(f"{name}: {r} {e}")
