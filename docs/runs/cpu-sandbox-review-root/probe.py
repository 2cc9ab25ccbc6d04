import os; print(os.environ.get("KOPT_CONFINED")); print(open("/proc/self/status").read().split("CapEff:")[1].split()[0]); print(open("/proc/self/status").read().split("Seccomp:")[1].split()[0])
