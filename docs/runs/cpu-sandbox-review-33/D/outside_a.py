import os, signal, subprocess, sys, time, pathlib
D = pathlib.Path("/tmp/review33/D"); (D/"scratch").mkdir(exist_ok=True); (D/"watched").mkdir(exist_ok=True)
(D/"outside.txt").write_text("x")
got = []
for s in (signal.SIGUSR1, signal.SIGIO):
    signal.signal(s, lambda n, f: got.append(signal.Signals(n).name))
env = dict(os.environ, PYTHONPATH="/work/main", VICTIM=str(os.getpid()), KOPT_KERNEL_OUTPUT=str(D/"scratch/output.log"))
(D/"scratch/output.log").unlink(missing_ok=True)
p = subprocess.Popen(["/work/main/.venv/bin/python", "-m", "kopt.inside.confined", str(D/"scratch"), "/work/main/.venv/bin/python", str(D/"probe_a.py")], env=env, start_new_session=True, stdin=subprocess.DEVNULL)
time.sleep(1.0)
with open(D/"outside.txt", "a") as f: f.write("judge writes\n")   # activity the fanotify mark may see
open(D/"outside.txt").read()
while not (D/"scratch/fan_done").exists() and p.poll() is None: time.sleep(0.1)
time.sleep(0.5)
(D/"watched"/"newfile").write_text("y")   # dnotify trigger
time.sleep(0.5)
p.wait()
time.sleep(0.3)
(D/"scratch/fan_done").unlink(missing_ok=True)
print("--- inside said:"); print((D/"scratch/output.log").read_text())
print("--- outside (victim) got signals:", got)
