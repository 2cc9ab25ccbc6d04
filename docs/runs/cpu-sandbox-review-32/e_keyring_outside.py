# Outside: a key of the launcher's in root's user keyring (@u, shared by every process of the uid);
# the confined process reads and rewrites it, plants a key there, and swaps its parent's session keyring.
# An observer process of the same uid, started before the attack, reads @u after it.
import subprocess, time
from common import *
KEY_SPEC_SESSION, KEY_SPEC_USER = -3, -4
def add(desc, data, ring): return sc(248, ctypes.c_char_p(b"user"), ctypes.c_char_p(desc), ctypes.c_char_p(data), len(data), ring)
def sess(): return sc(250, 0, KEY_SPEC_SESSION, 0)  # KEYCTL_GET_KEYRING_ID
def desc(k):
    d = ctypes.create_string_buffer(256); m = sc(250, 6, k, d, 256); return d.raw[:m-1].decode()
kid = add(b"judge-token", b"original secret", KEY_SPEC_USER)
observer = subprocess.Popen([PY, "e_keyring_observer.py"], stdin=subprocess.PIPE, text=True)
print(f"[outside] key {kid} 'judge-token' in @u = 'original secret'; launcher session keyring {sess()} ({desc(sess())})", flush=True)
confined("e_keyring_inside.py", kid)
time.sleep(0.2)
print(f"[outside] after: launcher session keyring {sess()} ({desc(sess())})", flush=True)
observer.communicate("go\n")
