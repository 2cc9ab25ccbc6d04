# Outside: the judge's log (a regular file outside the scratch, opened O_WRONLY|O_APPEND), inherited as
# the kernel's process's stdout and stderr, as a judge run under `> log 2>&1` or Snakemake's log: does.
from common import *
LOG = f"{D}/outside-judge.log"
with open(LOG, "w") as f: f.write("judge: v1 failed: outputs differ\njudge: v0 baseline 100.0 us\n")
fd = os.open(LOG, os.O_WRONLY | os.O_APPEND)
print("[outside] log before:", repr(open(LOG).read()), flush=True)
confined("g_stdout_inside.py", stdout=fd, stderr=fd)
print(open(f"{D}/scratch/g_report.txt").read(), end=""); print("[outside] log after: ", repr(open(LOG).read()))
