# Outside: the confined process binds abstract names first (the scope checks connects from inside only);
# an outside process then cannot bind its own name, and one that connects talks to the kernel.
import socket, time
from common import *
p = confined("h_abstract_inside.py", wait=False)
time.sleep(2.5)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try: s.bind("\0kopt-judge-service"); print("[outside] bind(@kopt-judge-service): ok", flush=True)
except OSError as e: print(f"[outside] bind(@kopt-judge-service): {e}", flush=True)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.settimeout(3)
c.connect("\0kopt-judge-service")
msg, fds, _, _ = socket.recv_fds(c, 100, 4)
print(f"[outside] a client connecting to @kopt-judge-service got {msg!r} and {len(fds)} descriptor(s): {[os.readlink(f'/proc/self/fd/{f}') for f in fds]}", flush=True)
print("[outside] attacker rc", p.wait())
