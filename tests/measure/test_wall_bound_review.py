"""Adversarial review of the moved-work bound (ac172df, 9a44a36): the judge's wall time around the
unprofiled in-process calls, one in 4 checked at random where Nsight Compute decides. On the CPU
(the interpreter; the judge's clock times the call). The GPU-only findings are in the review."""

import pytest

from tests.helpers import FIXTURES, run_version
from tests.measure.test_boundary import _verdicts, attack  # noqa: F401 - the fixture

ATTACKS = FIXTURES / "attacks"


def _sampled(run_params, n: int) -> dict:
    """The in-process timing as where Nsight Compute decides: one call in 4 checked, at random."""
    return {**run_params, "device": "cpu", "bench": {**run_params["bench"], "cpu_samples": n, "check_every": 4}}


def test_a_call_that_answers_before_its_work_is_done_fails_when_drawn(tiny, tmp_path, run_params, attack):  # noqa: F811
    """Stopped: 39 early answers survive the judge's draw with probability 0.75**39 (about 1e-5)."""
    corr, df, _ = run_version(tiny, ATTACKS / "review_answers_early.py", _sampled(run_params, 40), tmp_path)
    assert "answered a timed call before its work was done" in attack()
    assert corr["status"] == "pass" and (df["status"] == "failed").all(), _verdicts(corr, df)
    assert "wrong or unwritten" in df["error"].iloc[0]


@pytest.mark.xfail(
    strict=True,
    reason="review: the Guard does not watch torch.cuda._sleep, torch._C._cuda_synchronize or Lab's "
    "methods. Nothing trusted rests on them: the judge's wall time is of its own wall calls (no spin, "
    "its own flush, timed to its copy of the outputs; tests/gpu/test_gpu_clock.py)",
)
def test_a_kernel_that_disables_the_spin_flush_and_synchronize_is_failed_by_the_tripwire(
    tiny,
    tmp_path,
    run_params,
    attack,  # noqa: F811
):
    corr, df, _ = run_version(tiny, ATTACKS / "review_disables_spin.py", {**run_params, "device": "cpu"}, tmp_path)
    assert "spin, flush and synchronize disabled" in attack()
    assert "replaced" in _verdicts(corr, df)
