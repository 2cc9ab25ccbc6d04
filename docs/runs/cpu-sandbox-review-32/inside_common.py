import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    if r < 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
    return r
def t(name, fn):
    try:
        r = fn(); print(f"[inside OK ] {name}: {r}", flush=True); return r
    except Exception as e:
        print(f"[inside no ] {name}: {type(e).__name__} {e}", flush=True)
print("[inside] KOPT_CONFINED:", os.environ.get("KOPT_CONFINED"), flush=True)
