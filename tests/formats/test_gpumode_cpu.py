"""The CPU configs of a gpu-mode workspace (kopt.formats.gpumode_cpu): the tests timed at init,
the fast ones kept within a budget, every kind kept, a kind only slow tests have halved until fast."""

from kopt.formats import gpumode_cpu as cpu

# eigh's shape: a case only its largest test has (n = 4096, minutes on a CPU)
SPECS = [
    {"batch": 4, "n": 32, "case": "dense"},
    {"batch": 4, "n": 64, "case": "dense"},
    {"batch": 1, "n": 4096, "case": "diagonal"},
    {"batch": 4, "n": 128, "case": "dense"},
    {"batch": 4, "n": 128, "case": "band"},
]


def _seconds(spec: dict) -> float:
    return spec["batch"] * spec["n"] / 1024  # n = 128: 0.5 s; n = 4096: 4 s


def _survey(monkeypatch, specs=SPECS) -> list[dict]:
    calls = []
    monkeypatch.setattr(cpu, "_timed", lambda setup, spec, **kw: calls.append(spec) or _seconds(spec))
    said: list[dict] = []
    cpu.survey(None, specs, said.append)
    return said


def test_a_kind_only_a_slow_test_has_is_kept_halved_until_fast(monkeypatch):
    said = _survey(monkeypatch)
    assert sorted(d["i"] for d in said if "i" in d) == [0, 1, 2, 3, 4]  # every test timed within the budget
    kept, notes = cpu.choose(SPECS, said)
    assert kept[:4] == [SPECS[0], SPECS[1], SPECS[3], SPECS[4]]
    assert kept[4] == {"batch": 1, "n": 512, "case": "diagonal"}  # 4096 -> 2048 -> 1024 -> 512: 0.5 s
    assert any("case='diagonal'" in n and "n 4096 -> 512" in n for n in notes), notes
    assert any(n.startswith("1 of 5 tests left out") for n in notes), notes


def test_the_fast_tests_are_kept_within_the_budget_and_one_of_each_kind_beyond_it(monkeypatch):
    monkeypatch.setattr(cpu, "KEPT_S", 0.3)  # the two fastest (0.125 + 0.25 s)
    kept, notes = cpu.choose(SPECS, _survey(monkeypatch))
    assert {"batch": 4, "n": 128, "case": "dense"} not in kept  # over the budget, its kind kept already
    assert {"batch": 4, "n": 128, "case": "band"} in kept  # over the budget, the only one of its kind
    assert {k for sp in kept for k in cpu.kinds(sp)} == {k for sp in SPECS for k in cpu.kinds(sp)}


def test_tests_that_all_fit_are_kept_as_they_are(monkeypatch):
    small = [sp for sp in SPECS if sp["n"] <= 128]
    kept, notes = cpu.choose(small, _survey(monkeypatch, small))
    assert kept == small and notes == []


def test_where_no_test_runs_fast_the_cheapest_is_halved(monkeypatch):
    big = [{"dhidden": 7168, "seqlen": 512}, {"dhidden": 7168, "seqlen": 8192}]  # moe's: all slow
    monkeypatch.setattr(cpu, "_timed", lambda setup, spec, **kw: spec["dhidden"] * spec["seqlen"] / 1e6)
    said: list[dict] = []
    cpu.survey(None, big, said.append)
    kept, notes = cpu.choose(big, said)
    assert len(kept) == 1 and kept[0]["dhidden"] * kept[0]["seqlen"] <= 0.5e6, kept
    assert any(n.startswith("no test ran within 0.5 s: the cheapest, dhidden 7168 -> ") for n in notes), notes


def test_a_survey_cut_short_keeps_what_it_timed(monkeypatch):
    """The survey's process stopped at its limit: the tests it timed are chosen from."""
    said = [{"i": 0, "s": 0.1}, {"i": 1, "s": 0.2}]
    kept, notes = cpu.choose(SPECS, said)
    assert kept == SPECS[:2] and "3 of 5 tests left out" in notes[0]


def test_a_setup_over_its_limit_is_killed_not_waited_for():
    """Each test is timed in a process of its own, killed at the limit: an alarm in the survey's
    process waited 60 s for one of moe's single operations to end."""
    import time

    def slow(seed, **spec):
        time.sleep(30)

    def fails(seed, **spec):
        raise RuntimeError("needs a GPU library")

    t0 = time.monotonic()
    assert cpu._timed(slow, {"n": 1}, limit_s=0.3) == float("inf")
    assert time.monotonic() - t0 < 5
    assert cpu._timed(fails, {"n": 1}, limit_s=5) is None
    assert 0 <= cpu._timed(lambda seed, **spec: None, {"n": 1}, limit_s=5) < 5


def test_an_argument_whose_halving_fails_is_left_as_it_was(monkeypatch):
    """mla-decode's model dimension is structural: setup() fails at any other; the batch and the
    prefill are halved instead."""
    spec = {"batchsize": 128, "dim": 7168, "prefill": 128}

    def timed(setup, sp, **kw):
        return None if sp["dim"] != 7168 else sp["batchsize"] * sp["prefill"] / 1000

    monkeypatch.setattr(cpu, "_timed", timed)
    got, s = cpu._shrunk(None, spec)
    assert got["dim"] == 7168 and got["batchsize"] * got["prefill"] <= 500 and s <= cpu.PER_CONFIG_S, got


def test_an_error_of_the_problem_itself_is_raised_where_it_was_timed():
    """A ref_kernel whose result cannot be mapped is one line at init, as before the survey."""

    class Unmappable(Exception):
        pass

    def setup(seed, **spec):
        raise Unmappable("ref_kernel returns an empty tuple")

    try:
        cpu._timed(setup, {"n": 1}, limit_s=5, fatal=(Unmappable,))
    except cpu.Fatal as e:
        assert str(e) == "ref_kernel returns an empty tuple"
    else:
        raise AssertionError("not raised")


def test_a_problem_failing_at_every_size_says_its_own_error_at_init(tmp_path, capsys):
    """Every test's setup() fails here (a GPU library's error): init says that error, not that
    the tests were slow (a review's finding)."""
    import shutil
    from pathlib import Path

    from kopt.cli import main

    src = Path(__file__).parents[1] / "fixtures" / "gpumode" / "pmpp_v2"
    shutil.copytree(src, tmp_path / "pmpp_v2")
    ref = tmp_path / "pmpp_v2" / "vectoradd_py" / "reference.py"
    head = "def generate_input(size: int, seed: int) -> input_t:\n"
    ref.write_text(ref.read_text().replace(head, head + "    raise RuntimeError('Found no NVIDIA driver')\n", 1))
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(ref.parent)]) == 0
    said = capsys.readouterr().out
    assert "outputs: not found on this machine (RuntimeError: Found no NVIDIA driver)" in said, said
    assert "none ran here, halved or not (each failed or took over 2 s)" in said, said
