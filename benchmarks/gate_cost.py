"""The correctness gate's cost, this tree against another, alternated in one machine start:

    python3 benchmarks/gate_cost.py OTHER_TREE [rounds] [example]

Runs task ``correctness`` (the gate alone: every config of the example, its seeds) of the
example's v0 in each tree in turn, as rule ``measure`` would, and prints the wall time of the whole
child (start-up included) and of its gate (the child's timeline: device chosen -> end).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ONE = r"""
import json, sys, time
from pathlib import Path
from kopt.measure.runner import run_child
from kopt.steps.common import child_request
from kopt.workspace.target import load_workspace
ws = load_workspace(Path(sys.argv[1]), versions=False)
req = child_request(ws, str(Path(sys.argv[1]) / "kernels" / "v0.py"), {"device": "cuda", "bench": {}, "inputs": {}})
t0 = time.monotonic()
out = run_child("correctness", req, timeout_s=600)
wall = time.monotonic() - t0
ok = out.ok and all(c.get("ok") for c in out.result["configs"])
print(json.dumps({"wall_s": round(wall, 2), "timeline": out.timeline, "ok": ok, "configs": len(out.result["configs"]) if out.ok else None, "error": out.error}))
"""


def run(tree: Path, example: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": f"/tmp/site:{tree}"}
    r = subprocess.run([sys.executable, "-c", ONE, str(example)], cwd=tree, env=env, capture_output=True, text=True)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": r.stderr[-800:]}


def main() -> None:
    other, rounds = Path(sys.argv[1]).resolve(), int(sys.argv[2]) if len(sys.argv) > 2 else 2
    here = Path.cwd()
    example = here / (sys.argv[3] if len(sys.argv) > 3 else "examples/softmax")
    for i in range(rounds):
        for name, tree in (("other", other), ("this", here)):
            t = run(tree, example)
            tl = t.get("timeline") or {}
            gate = round(tl["end"] - tl["ready"], 2) if "end" in tl and "ready" in tl else None
            print(
                f"round {i + 1} {name:5s} wall {t.get('wall_s')} s, gate (ready -> end) {gate} s, ok {t.get('ok')}, "
                f"configs {t.get('configs')}, timeline {tl} {t.get('error') or ''}",
                flush=True,
            )
            time.sleep(1)


if __name__ == "__main__":
    main()
