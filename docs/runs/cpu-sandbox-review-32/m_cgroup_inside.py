import struct, time
from inside_common import *
cg = sys.argv[1]
t(f"write {cg}/cgroup.procs", lambda: open(f"{cg}/cgroup.procs", "w").write(str(os.getpid())))
d = os.open(cg, os.O_RDONLY | os.O_DIRECTORY)
CLONE_INTO_CGROUP = 0x200000000
args = struct.pack("=11Q", CLONE_INTO_CGROUP, 0, 0, 0, 17, 0, 0, 0, 0, 0, d)  # flags,pidfd,child_tid,parent_tid,exit_signal=SIGCHLD,stack,stack_size,tls,set_tid,set_tid_size,cgroup
buf = ctypes.create_string_buffer(args, len(args))
pid = libc.syscall(ctypes.c_long(435), buf, ctypes.c_long(len(args)))
if pid == 0:
    time.sleep(4); os._exit(0)
print(f"[inside] clone3(CLONE_INTO_CGROUP, {cg}):", pid if pid > 0 else os.strerror(ctypes.get_errno()), flush=True)
if pid > 0:
    print(f"[inside] child {pid} cgroup:", open(f"/proc/{pid}/cgroup").read().split("\n")[-2], flush=True); os.waitpid(pid, 0)
