"""The loop's rules: repairs, masks, splits and stop reasons in the fold; the GPU gate with a fake
nvidia-smi; the experience store; the kopt command; the new metadata checks."""

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from kopt.cli import main as kopt
from kopt.loop import decide as dec
from kopt.loop import gate
from kopt.loop.experience import Store
from kopt.workspace.target import WorkspaceError, load_workspace

ROOT = Path(__file__).resolve().parents[1]
P = dec.Params()


def C(v, t=None, status="ok", **kw):
    """A candidate with one class 'A' and configs a, b; t = µs of both (None: not ok)."""
    med = {"a": t, "b": t} if t is not None and status == "ok" else {}
    return dec.Candidate(v, status, reason=kw.pop("reason", None), medians=med, class_of={"a": "A", "b": "A"}, **kw)


# --- the fold ------------------------------------------------------------------------------

REPAIR_CASES = [
    # (sequence, expected decisions/reasons, expected repairs, abandoned)
    (
        [C("v0", 100), C("v1", status="incorrect", reason="bad"), C("v2", 90, repair_of="v1")],
        [("baseline", "baseline"), ("discard", "incorrect"), ("keep", "improved")],
        {},
        [],
    ),
    (
        [C("v0", 100), C("v1", status="incorrect")] + [C(f"v{i}", status="incorrect", repair_of="v1") for i in (2, 3, 4)]
        + [C("v5", 90, repair_of="v1")],
        [("baseline", "baseline"), ("discard", "incorrect"), ("discard", "incorrect"), ("discard", "incorrect"),
         ("discard", "incorrect"), ("discard", "repair-limit")],
        {"v1": 3},
        ["v1"],
    ),
]


@pytest.mark.parametrize("seq,expected,repairs,abandoned", REPAIR_CASES)
def test_repairs(seq, expected, repairs, abandoned):
    comps, st = dec.fold(seq, P)
    assert [(c["decision"], c["reason"]) for c in comps] == expected
    assert st["repairs"] == repairs and st["abandoned"] == abandoned


def test_failed_repairs_do_not_count_as_regressions():
    seq = [C("v0", 100), C("v1", 110), C("v2", 111), C("v3", status="incorrect")]
    seq += [C("v4", status="failed", repair_of="v3"), C("v5", 120, repair_of="v3")]
    comps, st = dec.fold(seq, P)
    assert [c["state"]["consecutive_regressions"] for c in comps] == [0, 1, 2, 0, 0, 0]
    assert comps[5]["reason"] == "regression"  # compared like any candidate, but not counted


def test_mask_takes_a_version_out_of_the_fold():
    comps, st = dec.fold([C("v0", 100), C("v1", 50, masked=True), C("v2", 90)], P)
    assert comps[1]["decision"] == "masked" and comps[1]["best_after"] == "v0"
    assert comps[2]["best_before"] == "v0" and comps[2]["decision"] == "keep" and st["masked"] == ["v1"]


def test_split_targets_what_it_routes_away_from_the_best():
    base = dec.Candidate("v0", "ok", medians={"a": 100.0, "b": 100.0}, class_of={"a": "A", "b": "B"})
    split = dec.Candidate(
        "v1", "ok", medians={"a": 80.0, "b": 100.2}, class_of={"a": "A", "b": "B"}, routes={"a": "v7", "b": "v0"}
    )
    comps, _ = dec.fold([base, split], P)
    assert comps[1]["dispatch"]["new_kernel_classes"] == ["A"] and comps[1]["decision"] == "keep"
    worse = dec.Candidate(
        "v1", "ok", medians={"a": 80.0, "b": 103.0}, class_of={"a": "A", "b": "B"}, routes={"a": "v7", "b": "v0"}
    )
    comps, _ = dec.fold([base, worse], P)
    assert comps[1]["decision"] == "discard" and comps[1]["reason"] == "regression"  # never split a split


@pytest.mark.parametrize(
    "seq,reason",
    [
        ([C("v0", 100)] + [C(f"v{i}", 100 + 2 * i) for i in range(1, 6)], "5 consecutive regressions"),
        ([C("v0", 100, target_reached={"A": True})], "target reached"),
        ([C("v0", 100), C("v1", status="failed", reason="gate: no idle GPU after 3600 s", gate_timeout=True)], "no idle GPU"),
    ],
)
def test_every_stop_reason(seq, reason):
    _, st = dec.fold(seq, P)
    assert st["stop"] and reason in st["stop_reason"]


# --- the GPU gate with a fake nvidia-smi -------------------------------------------------------

FAKE = r'''#!{python}
import json, os, sys
state = json.load(open(os.environ["FAKE_SMI"]))
counter = os.environ["FAKE_SMI"] + ".n"
n = int(open(counter).read()) if os.path.exists(counter) else 0
if any(a.startswith("--query-gpu") for a in sys.argv):
    snap = state[min(n, len(state) - 1)]
    open(counter, "w").write(str(n + 1))
    for g in snap["gpus"]:
        print(f"{{g['index']}}, GPU-{{g['index']}}, {{g['util']}}, {{g['mem']}}")
else:  # the processes of the snapshot whose GPU readings were just taken
    snap = state[min(max(n - 1, 0), len(state) - 1)]
    for a in snap.get("apps", []):
        print(f"GPU-{{a}}, 4242, 1000")
'''


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)

    def states(*snaps):
        f = tmp_path / "smi.json"
        f.write_text(json.dumps(list(snaps)))
        monkeypatch.setenv("FAKE_SMI", str(f))

    return states


IDLE = {"gpus": [{"index": 0, "util": 0, "mem": 500}, {"index": 1, "util": 3, "mem": 500}]}
BUSY = {"gpus": [{"index": 0, "util": 95, "mem": 70000}, {"index": 1, "util": 0, "mem": 9000}], "apps": [0, 1]}
FAST = {"sample_s": 0, "poll_s": 10, "max_wait_s": 60}


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_gate_picks_the_idlest_idle_gpu(fake_smi):
    fake_smi(IDLE, IDLE)
    env, rec = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    assert env == {"CUDA_VISIBLE_DEVICES": "0"} and rec["gpu_index"] == 0 and rec["checks"] == 1


def test_gate_skips_a_gpu_with_growing_memory(fake_smi):
    grow = {"gpus": [{"index": 0, "util": 0, "mem": 9000}, {"index": 1, "util": 5, "mem": 500}]}
    fake_smi(IDLE, grow)
    env, _ = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    assert env == {"CUDA_VISIBLE_DEVICES": "1"}


def test_gate_waits_for_a_busy_gpu_to_become_idle(fake_smi):
    fake_smi(BUSY, BUSY, IDLE, IDLE)
    clock = Clock()
    env, rec = gate.acquire(FAST, "cuda", sleep=clock.sleep, clock=clock)
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and rec["checks"] == 2 and rec["waited_s"] == 10


def test_gate_gives_up_when_never_idle(fake_smi):
    fake_smi(BUSY)
    clock = Clock()
    with pytest.raises(gate.GateTimeout, match=r"gate: no idle GPU .*compute process"):
        gate.acquire(FAST, "cuda", sleep=clock.sleep, clock=clock)
    assert clock.t <= 60


def test_gate_respects_visible_devices(fake_smi, monkeypatch):
    fake_smi(IDLE, IDLE)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    env, _ = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    assert env == {"CUDA_VISIBLE_DEVICES": "1"}


def test_gate_passes_without_a_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gate.acquire(FAST, "auto")[1]["gate"] == "passed"
    assert gate.acquire(FAST, "cpu")[0] == {}


# --- the experience store ----------------------------------------------------------------------


def _entry(**kw):
    e = dict(kernel_type="softmax", backend="triton", chip="H100", bottleneck="memory-bound", strategy="fuse-passes",
             hypothesis="one pass", outcome="keep", reason="improved", change_pct=-20.0, source="test")
    return {**e, **kw}


def test_store_round_trip_and_priors(tmp_path):
    with Store(tmp_path / "x.sqlite") as st:
        assert st.stats()["priors"] > 10 and st.list() == []  # recommends on day one
        assert st.add(_entry()) and not st.add(_entry())  # no duplicates
        assert st.list()[0]["strategy"] == "fuse-passes" and st.search("one pass")[0]["outcome"] == "keep"
    with Store(tmp_path / "x.sqlite") as st:  # persisted
        assert len(st.list()) == 1 and st.stats()["by_outcome"] == {"keep": 1}


def test_store_merge_without_duplicates(tmp_path):
    with Store(tmp_path / "a.sqlite") as a:
        a.add(_entry())
        a.add(_entry(strategy="vector-width", outcome="discard", change_pct=0.1))
    with Store(tmp_path / "b.sqlite") as b:
        b.add(_entry())
        assert b.merge(tmp_path / "a.sqlite") == 1  # the shared entry and the priors are not copied twice
        assert len(b.list()) == 2


def test_recommend_ranks_by_past_success(tmp_path):
    with Store(tmp_path / "r.sqlite") as st:
        prior = [r["strategy"] for r in st.recommend("softmax", "triton", "H100", "memory-bound", n=10)]
        assert prior[0] == "fuse-passes"  # the table's order when nothing was tried
        for i in range(3):
            st.add(_entry(strategy="vector-width", outcome="keep", change_pct=-3.0 - i))
        for i in range(3):
            st.add(_entry(strategy="fuse-passes", outcome="discard", reason="tie", change_pct=0.1 * i))
        recs = st.recommend("softmax", "triton", "H100", "memory-bound", n=10)
        assert recs[0]["strategy"] == "vector-width" and (recs[0]["keeps"], recs[0]["tries"]) == (3, 3)
        fuse = next(r for r in recs if r["strategy"] == "fuse-passes")
        assert (fuse["keeps"], fuse["tries"]) == (0, 3) and recs.index(fuse) == len(recs) - 1


# --- the kopt command ---------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path):
    dst = tmp_path / "softmax"
    shutil.copytree(ROOT / "examples" / "softmax", dst)
    return dst


def test_kopt_new_status_mask(ws, tmp_path, capsys):
    results = tmp_path / "results"
    assert kopt(["status", "--workspace", str(ws), "--results", str(results)]) == 0
    assert "no results yet" in capsys.readouterr().out
    assert kopt(["new", "--workspace", str(ws), "--results", str(results), "--from", "v1"]) == 0
    assert (ws / "kernels" / "v7.py").read_text() == (ws / "kernels" / "v1.py").read_text()
    with pytest.raises(WorkspaceError, match=r"v7\.yaml: hypothesis: required .*not TODO"):
        load_workspace(ws)
    (ws / "kernels" / "v7.yaml").unlink()
    (ws / "kernels" / "v7.py").unlink()
    assert kopt(["mask", "--workspace", str(ws), "v2"]) == 0
    assert load_workspace(ws).version("v2").masked
    assert kopt(["unmask", "--workspace", str(ws), "v2"]) == 0
    assert not load_workspace(ws).version("v2").masked
    (results / "v6").mkdir(parents=True)
    (results / "workspace.json").write_text(json.dumps({"workspace": str(ws)}))  # whose tree this is
    state = {"best": {"version": "v1", "medians": {}}, "consecutive_regressions": 2, "stop": False}
    (results / "v6" / "compare.json").write_text(json.dumps({"version": "v6", "best_after": "v1", "state": state}))
    kopt(["status", "--workspace", str(ws), "--results", str(results)])  # from the last comparison
    out = capsys.readouterr().out
    assert "best: v1  (state after v6)" in out and "consecutive regressions: 2" in out
    (results / "state.json").write_text(json.dumps({"after": "v6", "best": "v1", "stop": True, "stop_reason": "target reached"}))
    kopt(["status", "--workspace", str(ws), "--results", str(results)])
    out = capsys.readouterr().out
    assert "best: v1" in out and "STOP: target reached" in out
    assert kopt(["mask", "--workspace", str(ws), "v99"]) == 2  # a clear error, not a traceback
    assert "no version v99" in capsys.readouterr().err


def test_kopt_experience_commands(tmp_path, capsys):
    db = str(tmp_path / "e.sqlite")
    args = ["--kernel-type", "softmax", "--backend", "triton", "--chip", "H100", "--bottleneck", "memory-bound"]
    assert kopt(["experience", "--db", db, "add", *args, "--strategy", "vector-width", "--hypothesis", "float4", "--outcome", "keep"]) == 0
    assert kopt(["experience", "--db", db, "recommend", *args, "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert "1. vector-width" in out and "1 kept of 1 tried" in out
    assert kopt(["experience", "--db", db, "stats"]) == 0 and '"entries": 1' in capsys.readouterr().out
    other = str(tmp_path / "other.sqlite")
    assert kopt(["experience", "--db", other, "add", *args, "--strategy", "fuse-passes", "--hypothesis", "one pass", "--outcome", "keep"]) == 0
    for cmd in (["list"], ["search", "float4"], ["merge", other]):
        assert kopt(["experience", "--db", db, *cmd]) == 0
    assert "merged 1 new entries" in capsys.readouterr().out
    assert kopt(["experience", "--db", db, "merge", db]) == 2  # into itself: refused with a message
    assert "into itself" in capsys.readouterr().err


# --- metadata checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "meta,msg",
    [
        ("parent: v1\nhypothesis: x\nrationale: y\n", r"v7\.yaml: expected: required"),
        ("parent: v1\nhypothesis: x\nrationale: y\nexpected: z\nrepair_of: v9\n", r"repair_of: v9 is not an earlier"),
        ("parent: v1\nhypothesis: x\nrationale: y\nexpected: z\ndispatch:\n  - {when: {N: [256]}, use: v3}\n  - {when: {N: [2048]}, use: v1}\n",
         r"dispatch\[1\]: the last entry is the default"),
        ("parent: v1\nhypothesis: x\nrationale: y\nexpected: z\ndispatch:\n  - {when: {K: [256]}, use: v3}\n  - {use: v1}\n",
         r"dispatch\[0\]\.when: 'K' is not a config column"),
    ],
)
def test_version_metadata_errors(ws, meta, msg):
    (ws / "kernels" / "v7.yaml").write_text(meta)
    if "dispatch" not in meta:
        shutil.copy(ws / "kernels" / "v1.py", ws / "kernels" / "v7.py")
    with pytest.raises(WorkspaceError, match=msg):
        load_workspace(ws)
