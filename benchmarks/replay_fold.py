"""The decision fold of today's code replayed on recorded GPU runs: each run folder's v0 and v1
bench.csv (as benchmarks/fresh_runs.sh copies them) folded again with every default, beside the
decision recorded then. Only the fold is replayed; the measurements are the run's.

    python benchmarks/replay_fold.py docs/runs/h100-bound/session11/fresh-19/*/[0-9]
"""

import json
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kopt.loop import decide as dec  # noqa: E402
from kopt.steps.compare import candidate  # noqa: E402


def main(runs: list[str]) -> None:
    passed = Path(tempfile.mkdtemp()) / "correctness.json"  # every recorded version passed its gate
    passed.write_text(json.dumps({"status": "pass", "error": None}))
    for run in map(Path, runs):
        cands = [candidate(v, str(passed), pd.read_csv(run / f"{v}_bench.csv"), {}, "k") for v in ("v0", "v1")]
        comps, _ = dec.fold(cands, dec.Params())
        then = json.loads((run / "v1_compare.json").read_text())["decision"]
        print(f"{run}: v1 {then} then, {comps[1]['decision']} ({comps[1]['reason']}) now")


if __name__ == "__main__":
    main(sys.argv[1:])
