"""Adversarial reviews of the moved-work bound (ac172df, 9a44a36; issue 42), on the CPU (the
interpreter; the judge's clock times the call and checks every one). On a GPU the bound is the
judge's own clock around batches of back-to-back calls, every one checked (kopt.measure.bound;
tests/gpu/test_gpu_bound.py and test_gpu_clock.py run the attacks there)."""

from tests.helpers import FIXTURES, run_version
from tests.measure.test_boundary import _verdicts, attack  # noqa: F401 - the fixture

ATTACKS = FIXTURES / "attacks"


def test_a_call_that_answers_before_its_work_is_done_fails(tiny, tmp_path, run_params, attack):  # noqa: F811
    """Its first early answer reads the poison the judge left."""
    params = {**run_params, "device": "cpu", "bench": {**run_params["bench"], "cpu_samples": 4}}
    corr, df, _ = run_version(tiny, ATTACKS / "review_answers_early.py", params, tmp_path)
    assert "answered a timed call before its work was done" in attack()
    assert corr["status"] == "pass" and (df["status"] == "failed").all(), _verdicts(corr, df)
    assert "wrong or unwritten" in df["error"].iloc[0]


def test_a_kernel_that_disables_the_spin_flush_and_synchronize_is_failed_by_the_tripwire(
    tiny,
    tmp_path,
    run_params,
    attack,  # noqa: F811
):
    corr, df, _ = run_version(tiny, ATTACKS / "review_disables_spin.py", {**run_params, "device": "cpu"}, tmp_path)
    """Issue 42: the Guard watches the methods of kopt's classes in the kernel's process (Session,
    Lab, PersistingL2) now, so replacing Lab.clear_caches trips it (the spin and torch._C's
    synchronize it still does not watch; nothing trusted rests on them: the bound's batches, the
    judge's own clock, kopt.measure.bound)."""
    assert "spin, flush and synchronize disabled" in attack()
    assert "replaced" in _verdicts(corr, df) and "Lab.clear_caches" in _verdicts(corr, df)
