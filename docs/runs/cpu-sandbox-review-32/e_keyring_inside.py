from inside_common import *
kid = int(sys.argv[1]); KEY_SPEC_USER = -4
def read(k):
    buf = ctypes.create_string_buffer(256); n = sc(250, 11, k, buf, 256); return buf.raw[:n]
t(f"keyctl(READ, outside key {kid})", lambda: read(kid))
t(f"keyctl(UPDATE, outside key {kid}, 'forged by kernel')", lambda: sc(250, 2, kid, ctypes.c_char_p(b"forged by kernel"), 16))
t("add_key(user, planted-by-kernel, @u)", lambda: sc(248, ctypes.c_char_p(b"user"), ctypes.c_char_p(b"planted-by-kernel"), ctypes.c_char_p(b"x"), 1, KEY_SPEC_USER))
t("keyctl(JOIN_SESSION_KEYRING, kernel-made) then KEYCTL_SESSION_TO_PARENT", lambda: (sc(250, 1, ctypes.c_char_p(b"kernel-made")), sc(250, 18)))
