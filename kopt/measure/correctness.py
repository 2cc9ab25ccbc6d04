"""The correctness gate (child side): ``seeds`` calls per config, each on freshly drawn inputs
with poisoned outputs, checked after the call against the float64 reference of its own inputs
(kopt.measure.trial), with the inputs compared bit for bit."""

from __future__ import annotations

from kopt.measure.device import Guard, sync
from kopt.measure.trial import Trial


def check_config(ref, kernel, item: dict, *, seeds: int, device: str, guard: Guard, opts: dict) -> dict:
    key = item["key"]
    trial = Trial(ref, kernel, item, device=device, guard=guard, opts=opts, phase="correctness")
    rec = {
        "config": item["config"],
        "key": key,
        "class": item["class"],
        "atol": item["tol"]["atol"],
        "rtol": item["tol"]["rtol"],
    }
    rec["seeds"] = []
    for _ in range(seeds):
        s = trial.prepare()
        sync(device)
        ret = trial.call(s)
        sync(device)
        guard.check(f"config {key}, seed {s.seed}")
        r = trial.check(s, ret, detail=True)
        rec["seeds"].append({k: r[k] for k in ("seed", "ok", "max_abs", "max_rel", "reason")})
    rec["ok"] = all(s["ok"] for s in rec["seeds"])
    rec["max_abs"] = max((s["max_abs"] for s in rec["seeds"]), default=0.0)
    rec["max_rel"] = max((s["max_rel"] for s in rec["seeds"]), default=0.0)
    rec["reason"] = next((s["reason"] for s in rec["seeds"] if not s["ok"]), None)
    rec.update(trial.record())
    return rec
