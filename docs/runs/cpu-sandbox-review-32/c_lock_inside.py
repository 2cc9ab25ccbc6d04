# Inside: flock(LOCK_EX) and a POSIX read lock on read-only descriptors of a file outside; hold 10 s.
import fcntl, time
from inside_common import *
F = sys.argv[1]
a = os.open(F, os.O_RDONLY); b = os.open(F, os.O_RDONLY)
t("flock(read-only fd, LOCK_EX)", lambda: fcntl.flock(a, fcntl.LOCK_EX))
t("fcntl(read-only fd, F_SETLK F_RDLCK)", lambda: fcntl.lockf(b, fcntl.LOCK_SH))
time.sleep(10)
