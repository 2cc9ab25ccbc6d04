# Outside: a cgroup v2 group of someone else's (made here by the launcher); the confined process starts a
# child straight into it with clone3(CLONE_INTO_CGROUP) on a read-only descriptor of the group's folder.
import time
from common import *
cg = "/sys/fs/cgroup/unified/review32-other"
os.makedirs(cg, exist_ok=True)
print("[outside] before:", cg, "cgroup.procs =", open(f"{cg}/cgroup.procs").read().split(), flush=True)
p = confined("m_cgroup_inside.py", cg, wait=False)
time.sleep(3)
print("[outside] while the attacker lives:", cg, "cgroup.procs =", open(f"{cg}/cgroup.procs").read().split(), flush=True)
p.wait(); time.sleep(0.5)
try: os.rmdir(cg)
except OSError as e: print("[outside] rmdir:", e)
