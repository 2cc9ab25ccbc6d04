import time
from inside_common import *
def adj():
    open("/proc/self/oom_score_adj", "w").write("-1000")
    return open("/proc/self/oom_score_adj").read().strip()
t("write /proc/self/oom_score_adj -1000, read back", adj)
bufs = []
for i in range(40):
    bufs.append(bytearray(20 << 20)); bufs[-1][::4096] = b"x" * len(bufs[-1][::4096])
print(f"[inside] allocated {len(bufs) * 20} MB and still alive", flush=True)
