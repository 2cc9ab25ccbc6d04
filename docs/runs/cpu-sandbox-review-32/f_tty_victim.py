import os, signal, sys, termios, time, fcntl
log = open(sys.argv[1], "a", buffering=1)
signal.signal(signal.SIGWINCH, lambda *a: log.write(f"{time.time():.1f} victim got SIGWINCH; winsize now {os.get_terminal_size(0)}\n"))
fcntl.fcntl(0, fcntl.F_SETFL, os.O_NONBLOCK)
lf0 = termios.tcgetattr(0)[3]
t_last = time.time(); start = t_last
while time.time() - start < 14:
    t0 = time.time()
    try: os.write(1, b"victim working\n")
    except OSError as e: log.write(f"{time.time():.1f} victim's write: {e}\n")
    dt = time.time() - t0
    if dt > 0.5: log.write(f"{time.time():.1f} victim's write to its terminal blocked {dt:.1f} s\n")
    lf = termios.tcgetattr(0)[3]
    if lf != lf0: log.write(f"{time.time():.1f} victim's termios lflag changed {lf0:#x} -> {lf:#x} (ECHO {'on' if lf & termios.ECHO else 'off'}, ICANON {'on' if lf & termios.ICANON else 'off'})\n"); lf0 = lf
    time.sleep(0.2)
try: log.write(f"victim reads its input at the end: {os.read(0, 100)!r}\n")
except BlockingIOError: log.write("victim reads its input at the end: nothing (EAGAIN)\n")
