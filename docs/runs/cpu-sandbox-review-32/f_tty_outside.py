# Outside: a "user's terminal": a pty whose foreground process (victim, its own session) writes a line
# every 0.2 s, logs SIGWINCH and its termios, and reads what the user types. The confined process
# (no controlling terminal, start_new_session as kopt starts it) opens the pty's slave read-only by name.
import pty, select, subprocess, threading, time
from common import *
master, slave = pty.openpty(); pts = os.ttyname(slave)
log = f"{D}/f_tty_victim.log"; open(log, "w").close()
victim = subprocess.Popen([PY, f"{D}/f_tty_victim.py", log], stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                          preexec_fn=lambda: __import__("fcntl").ioctl(0, __import__("termios").TIOCSCTTY, 0))
os.close(slave)
out = []
def drain():
    while True:
        try:
            r, _, _ = select.select([master], [], [], 0.1)
            if r: out.append(os.read(master, 4096))
        except OSError: return
threading.Thread(target=drain, daemon=True).start()
time.sleep(1)
print(f"[outside] victim {victim.pid} on {pts}", flush=True)
p = confined("f_tty_inside.py", pts, wait=False)
time.sleep(3.0); os.write(master, b"typed-by-user\n"); print("[outside] user typed 'typed-by-user'", flush=True)
time.sleep(1.0)
try: fd = os.open(pts, os.O_RDWR | os.O_NOCTTY); os.close(fd); print(f"[outside] open({pts}) while TIOCEXCL: ok", flush=True)
except OSError as e: print(f"[outside] open({pts}) while TIOCEXCL: {e}", flush=True)
p.wait(); print('[outside] attacker rc', p.returncode, flush=True); victim.wait(timeout=30)
print("[outside] attacker exited; victim log:")
print(open(log).read())
print('[outside] the terminal showed (last 300 bytes):', repr(b''.join(out)[-300:]))
