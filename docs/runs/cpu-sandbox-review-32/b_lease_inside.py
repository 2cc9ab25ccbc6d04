# Inside: F_SETLEASE(F_RDLCK) on a read-only descriptor of a file outside; ignore the lease-break SIGIO; hold 25 s.
import fcntl, signal, time
from inside_common import *
F = sys.argv[1]
signal.signal(signal.SIGIO, lambda *a: print("[inside] lease break notice (SIGIO), ignored", flush=True))
fd = t("open(outside, O_RDONLY)", lambda: os.open(F, os.O_RDONLY))
t("fcntl(F_SETLEASE, F_RDLCK)", lambda: fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK))
t("fcntl(F_GETLEASE)", lambda: fcntl.fcntl(fd, fcntl.F_GETLEASE))
time.sleep(25)
