"""The correctness gate: fresh seeds, poisoned outputs, float64 reference, input-mutation check."""

from __future__ import annotations

from .harness import Guard, bytes_equal, compare, make_case, poison_outputs, seed_for, sync
from .variants import KernelFault
from .workspace import config_key


def check_config(ref, kernel, cfg: dict, cls: str, *, seeds: int, tol: dict, device: str, guard: Guard) -> dict:
    key = config_key(cfg)
    rec = {"config": cfg, "key": key, "class": cls, "atol": tol["atol"], "rtol": tol["rtol"], "seeds": []}
    for i in range(seeds):
        seed = seed_for(key, i)
        case = make_case(ref, cfg, seed, device)
        before = {k: v.clone() for k, v in case.inputs.items() if hasattr(v, "clone") and k not in case.outputs}
        poison_outputs(case)
        sync(device)
        try:
            kernel(**case.inputs)
            sync(device)
        except KernelFault:
            raise
        except Exception as e:
            raise KernelFault(f"run_kernel raised {type(e).__name__}: {e}") from e
        guard.check(f"config {key}, seed {seed}")
        s = {"seed": seed}
        mutated = [k for k, v in before.items() if not bytes_equal(case.inputs[k], v)]
        if mutated:
            s.update(ok=False, reason=f"the kernel modified its input(s) {mutated}")
        else:
            worst = None
            for o in case.outputs:
                r = compare(case.inputs[o], case.expected[o], tol["atol"], tol["rtol"])
                if worst is None or (not r["ok"] and worst["ok"]) or r["max_abs"] > worst["max_abs"]:
                    worst = dict(r, output=o)
            s.update(ok=worst["ok"], max_abs=worst["max_abs"], max_rel=worst["max_rel"], reason=worst["reason"])
            if worst["reason"]:
                s["reason"] = f"output '{worst['output']}': {worst['reason']}"
        rec["seeds"].append(s)
    rec["ok"] = all(s["ok"] for s in rec["seeds"])
    rec["max_abs"] = max((s.get("max_abs", 0.0) for s in rec["seeds"]), default=0.0)
    rec["max_rel"] = max((s.get("max_rel", 0.0) for s in rec["seeds"]), default=0.0)
    rec["reason"] = next((s["reason"] for s in rec["seeds"] if not s["ok"]), None)
    return rec
