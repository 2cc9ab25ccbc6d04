# Outside the sandbox: listeners, victims, a file; then the confined attacker; then what arrived.
import ctypes, json, os, pty, select, signal, socket, subprocess, sys, time
D = "/tmp/attack-filter"; L = f"{D}/l"
os.makedirs(L, exist_ok=True)
for f in os.listdir(L): os.unlink(f"{L}/{f}")
libc = ctypes.CDLL(None, use_errno=True)
got = {}
def lst(name, s): s.setblocking(False); got[name] = s
# listeners
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(f"{L}/stream.sock"); s.listen(); lst("unix stream path", s)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(f"{L}/dgram.sock"); lst("unix dgram path", s)
os.link(f"{L}/dgram.sock", f"{L}/dgram-hardlink.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind("\0kopt-attack-stream"); s.listen(); lst("abstract stream", s)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind("\0kopt-attack-dgram"); lst("abstract dgram", s)
for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    s = socket.socket(fam, socket.SOCK_STREAM); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((host, 47001)); s.listen(); lst(f"tcp {host}", s)
    s = socket.socket(fam, socket.SOCK_DGRAM); s.bind((host, 47002)); lst(f"udp {host}", s)
# SysV message queue, POSIX mq
KEY = 0x4B4F5054
qid = libc.msgget(KEY, 0o1600); assert qid >= 0
libc.mq_open.restype = ctypes.c_int
mq = libc.mq_open(b"/kopt-attack", os.O_CREAT | os.O_RDONLY | os.O_NONBLOCK, 0o600, None)
# a file outside
OUT = f"{D}/outside.txt"
with open(OUT, "w") as f: f.write("original\n")
os.chmod(OUT, 0o644); os.utime(OUT, (2e9, 2e9))
st0 = os.stat(OUT)
# victims: a shell on a pty (its own session), a sleeper, a CPU spinner
master, slave = pty.openpty(); ptsname = os.ttyname(slave)
sh = os.fork()
if sh == 0:
    os.setsid(); os.close(master)
    fd = os.open(ptsname, os.O_RDWR)  # controlling terminal
    os.dup2(fd, 0); os.dup2(fd, 1); e = os.open("/dev/null", os.O_WRONLY); os.dup2(e, 2)
    os.execv("/bin/sh", ["sh", "-s"])
os.close(slave)
sleeper = subprocess.Popen([sys.executable, "-c", "import time\nwhile 1: time.sleep(0.01)"])
spinner = subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<8: pass"])
got_sigio = []
signal.signal(signal.SIGIO, lambda *a: got_sigio.append(1)); signal.signal(signal.SIGURG, lambda *a: got_sigio.append(2))
json.dump({"launcher": os.getpid(), "sh": sh, "pts": ptsname, "sleeper": sleeper.pid, "spinner": spinner.pid,
           "L": L, "key": KEY}, open(f"{D}/pids.json", "w"))
env = dict(os.environ, PYTHONPATH=os.environ.get("KOPT_TREE", "/tmp/filter-wt"))  # the tree whose sandbox is attacked
if len(sys.argv) > 1: env["KOPT_KERNEL_SOCKETS"] = sys.argv[1]
child = subprocess.Popen([sys.executable, "-m", "kopt.inside.confined", f"{D}/scratch", sys.executable, f"{D}/attack.py"], env=env)
time.sleep(1.5)  # then sockets bound after the sandbox's snapshot
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(f"{L}/late-dgram.sock"); lst("unix dgram bound late", s)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(f"{L}/late-stream.sock"); s.listen(); lst("unix stream bound late", s)
print("attacker exit:", child.wait(), flush=True)
print("==== launcher (outside) sees ====")
for name, s in got.items():
    try:
        if s.type == socket.SOCK_STREAM:
            c, _ = s.accept(); c.settimeout(0.5); print(f"  {name}: ACCEPTED, bytes={c.recv(100)!r}")
        else: print(f"  {name}: RECEIVED {s.recv(100)!r}")
    except (BlockingIOError, socket.timeout): print(f"  {name}: nothing")
buf = ctypes.create_string_buffer(128)
n = libc.msgrcv(qid, buf, 100, 0, 0o4000)  # IPC_NOWAIT
print("  SysV msg queue:", repr(buf.raw[8:8+n]) if n >= 0 else "nothing"); libc.msgctl(qid, 0, None)
n = libc.mq_receive(mq, buf, 8192, None) if mq >= 0 else -1
b2 = ctypes.create_string_buffer(8192); n = libc.mq_receive(mq, b2, 8192, None)
print("  POSIX mq:", repr(b2.raw[:n]) if n >= 0 else "nothing"); libc.mq_unlink(b"/kopt-attack")
st = os.stat(OUT)
print("  outside.txt content:", repr(open(OUT).read()), "mode", oct(st.st_mode & 0o7777), "was", oct(st0.st_mode & 0o7777),
      "uid/gid", st.st_uid, st.st_gid, "mtime", st.st_mtime, "was", st0.st_mtime)
print("  outside.txt xattrs:", {k: os.getxattr(OUT, k) for k in os.listxattr(OUT)})
print("  lsattr:", subprocess.run(["lsattr", OUT], capture_output=True, text=True).stdout.strip())
subprocess.run(["chattr", "-i", "-a", OUT])
print("  file made by injected shell command:", open(f"{D}/outside-tiocsti.txt").read().strip() if os.path.exists(f"{D}/outside-tiocsti.txt") else "none")
time.sleep(0.5)
print("  sh victim:", os.waitpid(sh, os.WNOHANG))
print("  sleeper victim rc:", sleeper.poll(), "spinner victim rc:", spinner.wait())
print("  launcher limits: CORE", open("/proc/self/limits").read().split("Max core file size")[1].split("\n")[0].split())
print("  launcher nice", os.getpriority(os.PRIO_PROCESS, 0), "affinity", sorted(os.sched_getaffinity(0)), "policy", os.sched_getscheduler(0))
print("  launcher got SIGIO/SIGURG:", got_sigio)
for p in (sh, sleeper.pid):
    try: os.kill(p, 9)
    except OSError: pass
