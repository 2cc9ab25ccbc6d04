# Outside: a victim (the judge stand-in) whose I/O priority the confined process changes with ioprio_set.
import subprocess, sys, time
from common import *
victim = subprocess.Popen([PY, "-c", "import time; time.sleep(30)"])
me = os.getpid()
get = lambda pid: sc(252, 1, pid)  # ioprio_get(IOPRIO_WHO_PROCESS, pid)
print("before: victim ioprio", hex(get(victim.pid)), "launcher ioprio", hex(get(me)), flush=True)
confined("a_ioprio_inside.py", victim.pid, me)
print("after:  victim ioprio", hex(get(victim.pid)), "(class", get(victim.pid) >> 13, ") launcher ioprio", hex(get(me)), "(class", get(me) >> 13, ")")
victim.kill()
