import ctypes, os, subprocess, time, pathlib
libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
D = pathlib.Path("/tmp/review33/D"); held = D/"scratch/fan_held"; held.unlink(missing_ok=True)
def try_init(tag):
    for flags, name in ((0x200, "FAN_CLASS_NOTIF|FAN_REPORT_FID"), (0x8, "FAN_CLASS_CONTENT (privileged)")):
        r = libc.syscall(ctypes.c_long(300), ctypes.c_long(flags), ctypes.c_long(0))
        print(f"outside root (all caps) {tag}: fanotify_init({name}) ->", r if r >= 0 else os.strerror(ctypes.get_errno()))
        if r >= 0: os.close(r)
try_init("before")
out = D/"scratch/fan_out.log"; out.unlink(missing_ok=True)
env = dict(os.environ, PYTHONPATH="/work/main", KOPT_KERNEL_OUTPUT=str(out))
p = subprocess.Popen(["/work/main/.venv/bin/python", "-m", "kopt.inside.confined", str(D/"scratch"), "/work/main/.venv/bin/python", str(D/"fan_hold.py")], env=env, start_new_session=True, stdin=subprocess.DEVNULL, stdout=open(D/"fan_stdout.txt", "w"))
while not held.exists(): time.sleep(0.1)
try_init("while the confined process runs")
p.wait(); try_init("after it exited")
print(out.read_text())
