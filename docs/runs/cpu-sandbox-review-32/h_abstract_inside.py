import socket
from inside_common import *
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
t("bind(@kopt-judge-service) + listen", lambda: (s.bind("\0kopt-judge-service"), s.listen()))
s.settimeout(6)
c, _ = s.accept()
m = os.memfd_create("from-the-kernel")
t("accept + send banner with SCM_RIGHTS (a memfd)", lambda: socket.send_fds(c, [b"hello from inside the sandbox"], [m]))
