# Outside: a lock file outside the scratch (as filelock/Snakemake/Nsight Compute keep); the confined
# process locks it through a read-only descriptor; the outside then tries to lock it.
import fcntl, struct, time
from common import *
F = f"{D}/outside.lock"
open(F, "w").close()
p = confined("c_lock_inside.py", F, wait=False)
time.sleep(2.0)
fd = os.open(F, os.O_RDWR)
def tr(what, fn):
    t0 = time.time()
    try: fn(); r = "acquired"
    except OSError as e: r = f"{e.__class__.__name__} {e}"
    print(f"[outside] {what}: {r} after {time.time() - t0:.1f} s", flush=True)
tr("flock(LOCK_EX|LOCK_NB)", lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
tr("fcntl F_SETLK F_WRLCK (POSIX lock)", lambda: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
tr("flock(LOCK_EX) blocking (as filelock.FileLock waits)", lambda: fcntl.flock(fd, fcntl.LOCK_EX))
print("[outside] attacker rc", p.wait())
