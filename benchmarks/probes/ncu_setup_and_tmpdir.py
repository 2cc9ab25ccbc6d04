"""Probe (issue 44 and the threat model's open item): Nsight Compute's set-up, and its TMPDIR.

1. Set-up: a clock process's first launch under the deciding clock's ncu command
   (kopt.profilers.ncu.clock_command) costs 0.63-0.85 s (the H100, the H200), five of them one
   after another in rule `measure`. Does an option of ncu's that changes nothing the judge reads
   shorten it: no section files (`--section-folder` an empty folder), no rules (`--apply-rules
   no`), no source import (`--import-source no`)? Each variant twice, alternated: the process's
   CUDA context, its warm-up launch (the set-up), two launches, its record as the judge reads it.
2. TMPDIR: until 8bfdccd the front end (trusted, unsandboxed) ran with the kernel's scratch as TMPDIR.
   With the front end given a folder of the judge's and the target its scratch (`env TMPDIR=...`
   between them), is the record still written, and which files does each folder hold while the
   target lives? Then two processes so started at once, the front ends' folder shared and the
   targets' not: does the second wait for the first (the lock is the front end's) or get shut
   down (the target's, as with a TMPDIR each: benchmarks/probes/clock_process_start.py)? And
   does a program the target starts (Triton's gcc) still run, the target sandboxed or not (with
   the front end's folder split from the target's, gcc under a sandboxed clock process died of
   SIGSEGV: docs/runs/h200-ncu-tmpdir/)? And which files does the target hold open from the
   start (a descriptor to the report or the record would be writable whatever Landlock says: the
   record was, H200: docs/runs/h200-gpu-tests-af7306c/), and over which unix sockets does the
   injection talk to its front end (an abstract one, ``@``, is reachable unless Landlock scopes it)?
   `--tmpdir-only`: this part alone.

    source benchmarks/gpu_env.sh; timeout -s INT -k 10 150 python3 benchmarks/probes/ncu_setup_and_tmpdir.py
"""

import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from clock_process_start import Proc  # noqa: E402 - its child, under ncu


def _files(folder: Path) -> list[str]:
    return sorted(f"{p.relative_to(folder)}{'/' if p.is_dir() else ''}" for p in folder.rglob("*"))


def set_up(tmp: Path) -> None:
    empty = tmp / "no-sections"
    empty.mkdir()
    variants = {
        "today": [],
        "no-sects": ["--section-folder", str(empty)],
        "no-rules": ["--apply-rules", "no"],
        "no-src": ["--import-source", "no"],
        "all-three": ["--section-folder", str(empty), "--apply-rules", "no", "--import-source", "no"],
    }
    warm: dict[str, list] = {k: [] for k in variants}
    for r in (1, 2):
        for name, extra in variants.items():
            front = tempfile.mkdtemp(dir=tmp)
            t0 = time.perf_counter()
            p = Proc(name, tmp / f"setup-{name}-{r}.csv", front, extra)
            p.do("context")
            warm[name].append(p.do("warm"))
            p.do("launch")
            p.do("launch")
            p.leave()
            print(f"  {name:9s} whole process {time.perf_counter() - t0:.2f} s", flush=True)
    print("  warm-up launch (ms) per variant:", json.dumps(warm), flush=True)


def tmpdirs(tmp: Path) -> None:
    front, target = Path(tempfile.mkdtemp(dir=tmp)), Path(tempfile.mkdtemp(dir=tmp))
    variants = [("one TMPDIR", None, None), ("one+sandbox", None, front), ("split", target, None)]
    sandboxed_split = [("split+sandbox", target, target), ("split+sandbox+tracker", target, target)]
    for label, target_tmp, sandboxed in [*variants, *sandboxed_split]:
        print(f"  -- {label}: front end {front.name}, target {target_tmp and target_tmp.name}", flush=True)
        p = Proc(label, tmp / f"tmp-{label}.csv", str(front), (), target_tmp and str(target_tmp))
        p.do("context")
        p.do("warm")
        if sandboxed:  # as a kernel's process is, writing only under its TMPDIR (the scratch)
            tracker = [str(d) for d in front.glob("NVIDIA-treetracker-*")] if label.endswith("tracker") else []
            p.do(" ".join(["sandbox", str(sandboxed), *tracker]))  # +tracker: its process tracker's pipes too
        p.do("spawn")
        p.do("fds")  # an open descriptor to the report or the record would be the kernel's to write
        print(f"  while alive: front end's {_files(front)}; target's {_files(target)}", flush=True)
        p.do("launch")
        p.leave()
        print(f"  after: front end's {_files(front)}; target's {_files(target)}", flush=True)
    print("  -- two at once, front ends' TMPDIR shared, targets' own", flush=True)
    targets = [tempfile.mkdtemp(dir=tmp) for _ in range(2)]
    holder = Proc("holder", tmp / "holder.csv", str(front), (), targets[0])
    waiter = Proc("waiter", tmp / "waiter.csv", str(front), (), targets[1])
    holder.do("context")
    waiter.do("context")
    holder.do("warm")
    leaving = threading.Timer(3.0, holder.leave)  # the holder leaves 3 s on: does the waiter wait?
    leaving.start()
    waiter.do("warm")
    leaving.join()
    waiter.do("launch")
    waiter.leave()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kopt-probe-") as tmp:
        if "--tmpdir-only" not in sys.argv:
            print("== set-up per option", flush=True)
            set_up(Path(tmp))
        print("== TMPDIR", flush=True)
        tmpdirs(Path(tmp))


if __name__ == "__main__":
    main()
