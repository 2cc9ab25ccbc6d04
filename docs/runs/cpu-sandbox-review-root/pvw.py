import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(b"x" * 8)
class iov(ctypes.Structure): _fields_ = [("b", ctypes.c_void_p), ("n", ctypes.c_size_t)]
l = iov(ctypes.addressof(buf), 8); r = iov(0x10000, 8)
n = libc.process_vm_writev(os.getppid(), ctypes.byref(l), 1, ctypes.byref(r), 1, 0)
print("process_vm_writev:", n, os.strerror(ctypes.get_errno()) if n < 0 else "")
n = libc.process_vm_readv(os.getppid(), ctypes.byref(l), 1, ctypes.byref(r), 1, 0)
print("process_vm_readv:", n, os.strerror(ctypes.get_errno()) if n < 0 else "")
