# Outside: the launcher waits for the confined process as a judge does (Popen.wait / poll). The confined
# process makes its parent its tracer (PTRACE_TRACEME: Landlock allows a less confined tracer) and stops.
import time
from common import *
p = confined("k_traceme_inside.py", wait=False)
t0 = time.time()
while p.poll() is None and time.time() - t0 < 10: time.sleep(0.1)
print(f"[outside] Popen.poll() says the kernel's process ended, returncode {p.returncode}, after {time.time() - t0:.1f} s", flush=True)
st = open(f"/proc/{p.pid}/status").read()
print("[outside] yet /proc/PID/status:", [l for l in st.splitlines() if l.startswith(("State", "TracerPid"))], flush=True)
os.kill(p.pid, 9); os.waitpid(p.pid, 0)
