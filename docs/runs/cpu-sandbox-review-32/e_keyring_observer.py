# A process of the same uid started before the attack: what @u holds after it.
import sys
from common import *
sys.stdin.readline()
def read(k):
    buf = ctypes.create_string_buffer(4096); n = sc(250, 11, k, buf, 4096); return buf.raw[:n]
ids = read(-4)
for i in range(0, len(ids), 4):
    k = int.from_bytes(ids[i:i+4], "little")
    d = ctypes.create_string_buffer(256); m = sc(250, 6, k, d, 256)
    try: v = read(k)
    except OSError as e: v = str(e)
    print(f"[observer] after: @u holds key {k}: {d.raw[:m-1].decode()} = {v!r}")
    sc(250, 9, k, -4)  # clean up
