"""GPU-only: the judge's memory between configs. A config's arena is shared with the kernel's
process (CUDA IPC), and torch keeps a shared block allocated while a process maps it, and for good
once a process that maps it is killed. So each config's pool was sized beside the last one, and the
clock's beside every arena of its ended processes: on the H100 the judge's allocations grew 32 -> 60
GiB through the softmax's clock configs, and one version got a pool of 16 sets against 32, so its
batches differed from the best's and an honest gain was left unresolved (issue 44, point 2). The
kernel's process now lets go before the next pool is sized and as it leaves
(kopt.measure.trial.release_arena, kopt.inside.serve's ``drop``)."""

import pytest
import torch

from kopt.measure import bound
from kopt.measure.trial import Trial, release_arena
from kopt.measure.variants import load_reference
from tests.helpers import ROOT, kernel_process

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")

HONEST = "import torch\n\ndef run_kernel(x, y):\n    y.copy_(torch.softmax(x, dim=-1))\n"
ITEM = {  # one set: 2 x 256 MiB; four sets: a 2 GiB arena
    "config": {"M": 16384, "N": 4096, "dtype": "float32"},
    "key": "k",
    "class": "c",
    "tol": {"atol": 1e-6, "rtol": 1e-5},
}
ARENA = 4 * 2 * 16384 * 4096 * 4


def _trial(ref, proc) -> Trial:
    return Trial(ref, proc, ITEM, device="cuda", opts={}, phase="bench", max_sets=4)


def _allocated_after_collect() -> int:
    torch.cuda.ipc_collect()
    return torch.cuda.memory_allocated()


def test_the_next_configs_pool_is_sized_with_the_last_arena_freed(tmp_path):
    (tmp_path / "k.py").write_text(HONEST)
    ref = load_reference(ROOT / "examples" / "softmax" / "ref.py")
    with kernel_process(tmp_path / "k.py", device="cuda") as proc:
        first = _trial(ref, proc)
        assert first.pool.arena.base.numel() >= ARENA
        del first
        before = _allocated_after_collect()
        assert before >= ARENA  # still mapped by the kernel's process: what the next pool was sized beside
        second = _trial(ref, proc)
        assert torch.cuda.memory_allocated() < ARENA * 1.5, "the last config's arena was still held"
        del second
        release_arena(proc, "cuda")
        assert _allocated_after_collect() < ARENA / 2


def test_a_process_that_leaves_lets_its_arena_go(tmp_path):
    """The clock's processes leave after their config's calls: their arenas go with them."""
    (tmp_path / "k.py").write_text(HONEST)
    ref = load_reference(ROOT / "examples" / "softmax" / "ref.py")
    with kernel_process(tmp_path / "k.py", device="cuda") as proc:
        trial = _trial(ref, proc)
        del trial
        proc.finish()
        assert _allocated_after_collect() < ARENA / 2


def test_after_calls_and_batches_the_next_pool_is_sized_with_the_last_arena_freed(tmp_path):
    """As in a rule `measure`: calls and the bound's batches on the first pool, then the next
    config's pool. The whole rule kept the last arena allocated where the first test, with no call
    made, did not (docs/runs/h100-decision-first/call5/), until `drop` collected the calls'
    reference cycles (call6/)."""
    (tmp_path / "k.py").write_text(HONEST)
    ref = load_reference(ROOT / "examples" / "softmax" / "ref.py")
    with kernel_process(tmp_path / "k.py", device="cuda") as proc:
        first = _trial(ref, proc)
        for i in range(3):
            first.judged(f"call {i}")
        bound.bound_calls(first, "k", {"bound_batches_min": 3, "bound_batches_max": 3}, est_us=1.0)
        del first
        second = _trial(ref, proc)
        assert torch.cuda.memory_allocated() < ARENA * 1.5, "the last config's arena was still held"
        del second
