# Inside: ioprio_set (x86_64 251) on another process of the same uid, and on every process of the uid.
from inside_common import *
victim, launcher = int(sys.argv[1]), int(sys.argv[2])
IDLE = 3 << 13
t(f"ioprio_set(WHO_PROCESS, victim {victim}, IDLE)", lambda: sc(251, 1, victim, IDLE))
t(f"ioprio_set(WHO_USER, uid 0, BE level 7)", lambda: sc(251, 3, 0, (2 << 13) | 7))
t(f"ioprio_set(WHO_PROCESS, launcher {launcher}, IDLE)", lambda: sc(251, 1, launcher, IDLE))
