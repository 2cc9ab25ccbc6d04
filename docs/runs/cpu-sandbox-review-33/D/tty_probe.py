import os, fcntl, termios, struct, ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(os.environ["VICTIM_TTY"], os.O_RDONLY | os.O_NOCTTY)
for name, cmd, arg in (("TCSBRK(0) send break", 0x5409, 0), ("TIOCCBRK", 0x5428, 0), ("TIOCNOTTY", 0x5422, 0),
                       ("FIONBIO", 0x5421, 1), ("FIOASYNC", 0x5452, 1), ("TIOCSTI", 0x5412, 0), ("TCSETS", 0x5402, 0),
                       ("TIOCSRS485", 0x542F, 0), ("TIOCSISO7816", 0xC0285443, 0)):
    buf = ctypes.create_string_buffer(64)
    r = libc.ioctl(fd, ctypes.c_ulong(cmd), ctypes.byref(ctypes.c_int(arg)) if cmd in (0x5421, 0x5452) else (buf if cmd in (0x5412, 0x5402, 0x542F, 0xC0285443) else ctypes.c_long(arg)))
    print(f"{name} (0x{cmd:X}): {r} {os.strerror(ctypes.get_errno()) if r else 'allowed'}")
