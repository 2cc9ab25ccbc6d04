from inside_common import *
def w(v):
    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY); os.write(fd, v); os.close(fd)
    return open("/proc/self/oom_score_adj").read().strip()
t("os.write(/proc/self/oom_score_adj, -1000)", lambda: w(b"-1000"))
t("os.write(/proc/self/oom_score_adj, -1)", lambda: w(b"-1"))
