"""A grandchild in its own session keeps output.log open and appends to it; does it outlive the
judge's end() and write after the relay?"""
import importlib.util, os, pathlib, sys, time
_b = importlib.util.spec_from_file_location("_l", pathlib.Path(__file__).with_name("_load.py"))
_m = importlib.util.module_from_spec(_b); _b.loader.exec_module(_m); B = _m.base()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open(os.environ["KOPT_KERNEL_OUTPUT"], os.O_WRONLY | os.O_APPEND)
        with open(os.environ["KOPT_ATTACK_LOG"], "a") as f: f.write(f"outlive: daemon pid {os.getpid()}\n")
        for i in range(600):
            os.write(fd, f"daemon line {i}\n".encode()); time.sleep(0.05)
        os._exit(0)
    os._exit(0)
B.log("outlive: started")
def run_kernel(x, y):
    B.honest(x, y)
