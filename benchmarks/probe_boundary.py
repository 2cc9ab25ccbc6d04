"""Probe of what the judge/kernel process split relies on, on one GPU machine: a tensor allocated
in a private torch.cuda.MemPool shared with another process by CUDA IPC (its segment holds
nothing else), writes of the other process seen by the owner, landlock's ABI, ptrace_scope, uid."""
import ctypes, os, subprocess, sys, json, pickle
import torch

def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(444, None, 0, 1), ctypes.get_errno()

if len(sys.argv) > 1:  # the other process
    import torch.multiprocessing.reductions as red
    fn, args = pickle.loads(bytes.fromhex(sys.argv[1]))
    t = getattr(red, fn)(*args)
    t.fill_(7.0)
    torch.cuda.synchronize()
    print("child wrote", t.shape, t.device, flush=True)
    sys.exit(0)

print("torch", torch.__version__, "uid", os.getuid(), "landlock", landlock_abi())
print("ptrace_scope", open("/proc/sys/kernel/yama/ptrace_scope").read().strip() if os.path.exists("/proc/sys/kernel/yama/ptrace_scope") else None)
print("lsm", open("/sys/kernel/security/lsm").read() if os.path.exists("/sys/kernel/security/lsm") else None, os.uname().release)
pool = torch.cuda.MemPool()
with torch.cuda.use_mem_pool(pool):
    a = torch.empty(3 * 2**20 + 16, dtype=torch.uint8, device="cuda")
other = torch.zeros(1000, device="cuda")
a.zero_()
segs = [s for s in torch.cuda.memory_snapshot() if any(b["address"] <= a.data_ptr() < b["address"] + b["size"] for b in s["blocks"])]
print("segment of the arena:", [(s["total_size"], s.get("segment_pool_id"), len(s["blocks"]), [b["state"] for b in s["blocks"]]) for s in segs])
f = a.view(torch.float32)[: 2**20]
import torch.multiprocessing.reductions as red
fn, args = red.reduce_tensor(f)
payload = pickle.dumps((fn.__name__, args)).hex()
r = subprocess.run([sys.executable, __file__, payload], capture_output=True, text=True)
print(r.stdout, r.stderr[-2000:])
torch.cuda.synchronize()
print("owner sees", float(f[0]), float(f[-1]), "other untouched", float(other.abs().sum()))
