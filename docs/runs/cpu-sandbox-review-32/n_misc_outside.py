# Outside: a sleeper victim, a FIFO outside the scratch with a writer blocked in open(O_WRONLY) and a
# folder outside for a core file; then the confined process's attempts (n_misc_inside.py); then what is seen.
import subprocess, time
from common import *
FIFO = f"{D}/outside.fifo"
if os.path.exists(FIFO): os.unlink(FIFO)
os.mkfifo(FIFO)
for f in os.listdir(f"{D}/outside-dir"): os.unlink(f"{D}/outside-dir/{f}")
writer = subprocess.Popen([PY, "-c", f"import os,time; t=time.time(); fd=os.open('{FIFO}', os.O_WRONLY); print('[outside writer] open(FIFO, O_WRONLY) returned after %.1f s' % (time.time()-t), flush=True); os.write(fd, b'for the real reader'); time.sleep(3)"])
victim = subprocess.Popen([PY, "-c", "import time; time.sleep(30)"])
p = confined("n_misc_inside.py", victim.pid, FIFO, f"{D}/outside-dir", wait=False)
p.wait(); writer.wait()
print("[outside] files in outside-dir after:", os.listdir(f"{D}/outside-dir"))
victim.kill()
