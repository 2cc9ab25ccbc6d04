"""The correctness gate (the judge's): ``seeds`` calls per config, each on freshly drawn inputs
with poisoned outputs, checked after the call against the float64 reference of its own inputs
(kopt.measure.trial), with the inputs compared bit for bit."""

from __future__ import annotations

from kopt.measure.boundary import KernelProcess
from kopt.measure.trial import Trial


def check_config(ref, proc: KernelProcess, item: dict, *, seeds: int, device: str, opts: dict) -> dict:
    key = item["key"]
    trial = Trial(ref, proc, item, device=device, opts=opts, phase="correctness")
    tol = trial.config_tolerance()
    rec = {"config": item["config"], "key": key, "class": item["class"], "atol": tol["atol"], "rtol": tol["rtol"]}
    rec["seeds"] = []
    for _ in range(seeds):
        s, d = trial.prepare()
        answer = trial.call(s, where=f"config {key}, seed {s.seed}", timed=False)
        r = trial.check(s, d, answer, detail=True)
        rec["seeds"].append({k: r[k] for k in ("seed", "ok", "max_abs", "max_rel", "reason")})
    rec["ok"] = all(s["ok"] for s in rec["seeds"])
    rec["max_abs"] = max((s["max_abs"] for s in rec["seeds"]), default=0.0)
    rec["max_rel"] = max((s["max_rel"] for s in rec["seeds"]), default=0.0)
    rec["reason"] = next((s["reason"] for s in rec["seeds"] if not s["ok"]), None)
    rec.update(trial.record())
    return rec
