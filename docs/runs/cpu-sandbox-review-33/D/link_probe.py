import os, ctypes
libc = ctypes.CDLL(None, use_errno=True)
s = "/tmp/review33/D/scratch"
src = "/tmp/review33/secret/other_owner.txt"
tmp = s + "/sl"; out = s + "/out.log"
for p in (tmp, out):
    if os.path.lexists(p): os.unlink(p)
os.symlink(src, tmp)
AT_FDCWD, AT_SYMLINK_FOLLOW = -100, 0x400
r = libc.linkat(AT_FDCWD, tmp.encode(), AT_FDCWD, out.encode(), AT_SYMLINK_FOLLOW)
print("linkat follow rc", r, os.strerror(ctypes.get_errno()) if r else "")
if r == 0:
    print("lstat out:", oct(os.lstat(out).st_mode), os.lstat(out).st_uid, "ino", os.lstat(out).st_ino, "secret ino", os.stat(src).st_ino)
r = libc.linkat(AT_FDCWD, src.encode(), AT_FDCWD, (out+"2").encode(), 0)
print("linkat plain rc", r, os.strerror(ctypes.get_errno()) if r else "")
