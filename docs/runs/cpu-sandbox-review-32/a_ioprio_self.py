from inside_common import *
t("ioprio_set(self, IDLE)", lambda: sc(251, 1, 0, 3 << 13))
t("ioprio_set(self, BE 7)", lambda: sc(251, 1, 0, (2 << 13) | 7))
t("ioprio_get(self)", lambda: sc(252, 1, 0))
