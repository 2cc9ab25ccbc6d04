# Shared by the outside launchers: run a script confined exactly as kopt starts a kernel's process.
import ctypes, os, subprocess, sys
D = "/tmp/review32"
PY = "/work/main/.venv/bin/python"
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def confined(script, *args, wait=True, **kw):
    """python -m kopt.inside.confined SCRATCH python SCRIPT ARGS (as kopt.measure.boundary starts it)."""
    env = dict(os.environ, PYTHONPATH="/work/main")
    cmd = [PY, "-m", "kopt.inside.confined", f"{D}/scratch", PY, f"{D}/{script}", *map(str, args)]
    kw.setdefault("start_new_session", True)
    kw.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.Popen(cmd, env=env, **kw)
    if wait:
        p.wait()
    return p

def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    if r < 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
    return r
