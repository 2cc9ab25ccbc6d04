import os, subprocess, termios, fcntl, struct
m, s = os.openpty(); name = os.ttyname(s)
before = (termios.tcgetattr(s), fcntl.fcntl(s, fcntl.F_GETFL))
env = dict(os.environ, PYTHONPATH="/work/main", VICTIM_TTY=name, KOPT_KERNEL_OUTPUT="/tmp/review33/D/scratch/tty_out.log")
subprocess.run(["/work/main/.venv/bin/python", "-m", "kopt.inside.confined", "/tmp/review33/D/scratch", "/work/main/.venv/bin/python", "/tmp/review33/D/tty_probe.py"], env=env, start_new_session=True, stdin=subprocess.DEVNULL)
after = (termios.tcgetattr(s), fcntl.fcntl(s, fcntl.F_GETFL))
os.set_blocking(m, False)
try: pending = os.read(m, 100)
except BlockingIOError: pending = b""
print("victim pty", name, "settings+flags unchanged:", before == after, "; master saw:", pending)
