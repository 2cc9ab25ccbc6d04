"""Probe (issue 44 pt 2, the batch sizes that differed between versions on the H100): on
PYTHONPATH with PROBE_TRIAL=1, every judge child prints, as each config's pool is sized
(kopt.measure.trial.Trial._pool_size, after the last arena was let go and collected), the
judge's GPU memory then: free, allocated (an arena a process still maps stays allocated) and
reserved, and how many other Trials are alive."""

import gc
import os
import sys


def _hook():
    import torch

    import kopt.measure.trial as T

    orig = T.Trial._pool_size

    def sized(self, one, max_sets, min_sets):
        n, why = orig(self, one, max_sets, min_sets)
        g = 2**30
        free = torch.cuda.mem_get_info()[0] if self.device == "cuda" else 0
        others = sum(1 for o in gc.get_objects() if isinstance(o, T.Trial)) - 1
        print(
            f"PROBE {self.key} {self.seeds.phase}: "
            f"free {free / g:.1f} alloc {torch.cuda.memory_allocated() / g:.1f} "
            f"reserved {torch.cuda.memory_reserved() / g:.1f} GiB; other Trials {others}; {n} sets",
            file=sys.stderr,
            flush=True,
        )
        return n, why

    T.Trial._pool_size = sized


if os.environ.get("PROBE_TRIAL"):

    class _OnChild:
        def find_spec(self, name, path, target=None):
            if name == "kopt.measure.child":
                sys.meta_path.remove(self)
                _hook()
            return None

    sys.meta_path.insert(0, _OnChild())
