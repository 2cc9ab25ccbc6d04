# Outside: a memory cgroup holding a victim (the judge stand-in, 150 MB) and the confined process; the
# confined process sets its own oom_score_adj to -1000, then allocates past the cgroup's limit.
import subprocess, time
from common import *
base = "/sys/fs/cgroup/memory" + open("/proc/self/cgroup").read().split(":memory:")[1].split("\n")[0]
cg = f"{base}/review32"
os.makedirs(cg, exist_ok=True)
open(f"{cg}/memory.limit_in_bytes", "w").write(str(400 << 20))
try: open(f"{cg}/memory.memsw.limit_in_bytes", "w").write(str(400 << 20))
except OSError: pass
join = lambda: open(f"{cg}/cgroup.procs", "w").write(str(os.getpid()))
victim = subprocess.Popen([PY, "-c", "import time; b = bytearray(150 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(60)"], preexec_fn=join)
time.sleep(1.5)
print(f"[outside] victim {victim.pid} oom_score_adj {open(f'/proc/{victim.pid}/oom_score_adj').read().strip()} oom_score {open(f'/proc/{victim.pid}/oom_score').read().strip()}", flush=True)
p = confined("j_oom_inside.py", wait=False, preexec_fn=join)
rc = p.wait()
time.sleep(0.5)
print(f"[outside] attacker rc {rc}; victim rc {victim.poll()} (-9: OOM-killed)", flush=True)
victim.kill(); victim.wait(); time.sleep(0.3)
os.rmdir(cg)
