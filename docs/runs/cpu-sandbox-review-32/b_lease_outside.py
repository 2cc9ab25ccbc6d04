# Outside: a root-owned file outside the scratch; the confined process takes a read lease on it
# through a read-only descriptor; the outside then opens it for writing / truncates it.
import time
from common import *
F = f"{D}/outside-lease.txt"
open(F, "w").write("results\n")
p = confined("b_lease_inside.py", F, wait=False, stdout=None)
time.sleep(2.0)
for what, fn in (("open(O_WRONLY|O_NONBLOCK)", lambda: os.open(F, os.O_WRONLY | os.O_NONBLOCK)),
                 ("open(O_WRONLY) (blocking, as a judge writes its results)", lambda: os.open(F, os.O_WRONLY)),
                 ("truncate()", lambda: os.truncate(F, 0))):
    t0 = time.time()
    try:
        fd = fn(); r = "ok"
        if isinstance(fd, int): os.close(fd)
    except OSError as e:
        r = f"{e.__class__.__name__} {e}"
    print(f"[outside] {what}: {r} after {time.time() - t0:.1f} s", flush=True)
print("[outside] attacker rc", p.wait())
