# Outside: a stream and a dgram listener at paths (covered by the sandbox); inside: reach both by inode.
import os, socket, subprocess, sys
D = "/tmp/attack-filter/h"; os.makedirs(D, exist_ok=True)
for f in os.listdir(D): os.unlink(f"{D}/{f}")
st = socket.socket(socket.AF_UNIX); st.bind(f"{D}/stream.sock"); st.listen(); st.settimeout(3)
dg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); dg.bind(f"{D}/dgram.sock"); dg.settimeout(3)
INSIDE = r'''
import ctypes, os, socket, struct, sys
print(os.environ["KOPT_CONFINED"])
libc = ctypes.CDLL(None, use_errno=True)
def by_inode(path):  # O_PATH fd on the socket's own inode: inode number from the directory, generation 0 (ext4: unchecked)
    d, n = os.path.split(path); ino = next(e.inode() for e in os.scandir(d) if e.name == n)
    fh = struct.pack("=IiII", 8, 1, ino, 0)  # FILEID_INO32_GEN
    fd = libc.open_by_handle_at(os.open("/", os.O_RDONLY), ctypes.create_string_buffer(fh, 16), os.O_PATH)
    assert fd >= 0, os.strerror(ctypes.get_errno()); return f"/proc/self/fd/{fd}"
D = sys.argv[1]
print("stat of covered path:", os.stat(f"{D}/dgram.sock").st_rdev)  # /dev/null's
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
try: a.sendto(b"dgram by path", f"{D}/dgram.sock"); print("by path: sent")
except OSError as e: print("dgram by path:", e)
print("dgram by inode:", a.sendto(b"dgram by inode", by_inode(f"{D}/dgram.sock")))
s = socket.socket(socket.AF_UNIX)
try: s.connect(f"{D}/stream.sock"); print("stream by path: connected")
except OSError as e: print("stream by path:", e)
try: s.connect(by_inode(f"{D}/stream.sock")); s.send(b"stream by inode"); print("stream by inode: connected, sent")
except OSError as e: print("stream by inode:", e)
'''
env = dict(os.environ, PYTHONPATH="/tmp/filter-wt")
if len(sys.argv) > 1: env["KOPT_KERNEL_SOCKETS"] = sys.argv[1]  # a user's folder: the filter's connect ban off
subprocess.run([sys.executable, "-m", "kopt.inside.confined", "/tmp/attack-filter/scratch", sys.executable, "-c", INSIDE, D], env=env)
try: print("OUTSIDE dgram got:", dg.recv(100))
except OSError as e: print("OUTSIDE dgram:", e)
try: c, _ = st.accept(); c.settimeout(1); print("OUTSIDE stream got:", c.recv(100))
except OSError as e: print("OUTSIDE stream:", e)
