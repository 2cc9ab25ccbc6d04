import os, pty, time, fcntl, sys
m, s = pty.openpty(); n = os.ttyname(s)
pid = os.fork()
if pid == 0:
    os.setsid(); os.close(m); fd = os.open(n, os.O_RDWR); os.dup2(fd, 0); os.dup2(fd, 1)
    e = os.open("/dev/null", os.O_WRONLY); os.dup2(e, 2); os.execv("/bin/cat", ["cat"])
os.close(s); time.sleep(0.5)
st = open(f"/proc/{pid}/status").read(); print([l for l in st.splitlines() if l.startswith(("SigIgn", "SigCgt"))])
print("tpgid", open(f"/proc/{pid}/stat").read().split()[7], "pgrp", open(f"/proc/{pid}/stat").read().split()[4])
if len(sys.argv) > 1:
    import subprocess
    subprocess.run(["/work/main/.venv/bin/python", "-m", "kopt.inside.confined", "/tmp/attack-filter/scratch", "/work/main/.venv/bin/python", "-c",
        f"import os,fcntl\nfd=os.open('{n}',os.O_RDONLY|os.O_NOCTTY)\nfcntl.ioctl(fd,0x5412,b'\\x03')\nprint('pushed ^C', os.environ['KOPT_CONFINED'][-12:])"], env=dict(os.environ, PYTHONPATH="/tmp/filter-wt"))
else:
    fd = os.open(n, os.O_RDONLY | os.O_NOCTTY); fcntl.ioctl(fd, 0x5412, b"\x03")
time.sleep(0.5); print("sh:", os.waitpid(pid, os.WNOHANG))
