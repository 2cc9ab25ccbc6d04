"""Probe (issue 44 pt 2, the batch sizes that differed between versions on the H100): on
PYTHONPATH with PROBE_TRIAL=1, every judge child prints, as each Trial (one config's pool) is made,
the Trials still alive and the judge's GPU memory before and after gc.collect() and
torch.cuda.ipc_collect(): whether an earlier config's pool is still held when the next is sized."""

import gc
import os
import sys


def _hook():
    import torch

    import kopt.measure.trial as T

    orig = T.Trial.__init__

    def mem():
        if not torch.cuda.is_initialized():
            return "cpu"
        free, total = torch.cuda.mem_get_info()
        g = 2**30
        return (
            f"free {free / g:.1f} alloc {torch.cuda.memory_allocated() / g:.1f} "
            f"reserved {torch.cuda.memory_reserved() / g:.1f} GiB"
        )

    def init(self, *a, **k):
        before = sum(1 for o in gc.get_objects() if isinstance(o, T.Trial)) - 1
        m0 = mem()
        n = gc.collect()
        after = sum(1 for o in gc.get_objects() if isinstance(o, T.Trial)) - 1
        m1 = mem()
        if torch.cuda.is_initialized():
            torch.cuda.ipc_collect()
            torch.cuda.empty_cache()
        m2 = mem()
        print(
            f"PROBE {a[2]['key'] if len(a) > 2 else '?'} {k.get('phase')}: other Trials alive {before} "
            f"-> {after} after gc ({n} objects); {m0} | after gc {m1} | after ipc_collect {m2}",
            file=sys.stderr,
            flush=True,
        )
        orig(self, *a, **k)

    T.Trial.__init__ = init


if os.environ.get("PROBE_TRIAL"):

    class _OnChild:
        def find_spec(self, name, path, target=None):
            if name == "kopt.measure.child":
                sys.meta_path.remove(self)
                _hook()
            return None

    sys.meta_path.insert(0, _OnChild())
