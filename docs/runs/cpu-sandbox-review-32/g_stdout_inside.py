# Inside: fd 1 is a regular file outside, open for writing (close_handed_files leaves fds 0-2 alone).
import fcntl, os
rep = open("/tmp/review32/scratch/g_report.txt", "w")
rep.write(f"[inside] fd 1 is {os.readlink('/proc/self/fd/1')}; KOPT_CONFINED={os.environ['KOPT_CONFINED'][-60:]}\n")
fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) & ~os.O_APPEND)
os.ftruncate(1, 0)
os.pwrite(1, b"judge: v1 kept: 10.0 us (10x faster)\n", 0)
rep.write("[inside] F_SETFL without O_APPEND, ftruncate(1, 0), pwrite(1, forged, 0): all returned without error\n")
