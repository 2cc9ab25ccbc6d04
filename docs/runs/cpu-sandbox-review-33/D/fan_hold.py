import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
n = 0
while libc.syscall(ctypes.c_long(300), ctypes.c_long(0x200), ctypes.c_long(0)) >= 0: n += 1
print(f"inside: holding {n} fanotify groups", flush=True)
open("/tmp/review33/D/scratch/fan_held", "w").close()
time.sleep(6)
