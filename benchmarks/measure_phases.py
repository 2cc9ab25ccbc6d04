"""Rule `measure` of the softmax example phase by phase, from benchmarks/ab_measure.sh's timelines (its ab-timelines.tgz
unpacked in DIR): seconds from the first child's go to its ready, the set-up before the correctness gate
(prep: the reference, the kernel's import, the clock's processes started), the gate's checks, the bench,
the wait for the clock's first process, the clock, the end; then the profile child's start, its
set-up, its classes, its metadata; and what followed (tail: writing the records).

    python3 benchmarks/measure_phases.py DIR
"""

import re
import sys
from pathlib import Path

EVENT = re.compile(r"(?:^|, )([^,]*?(?:,N=\d+,dtype=\w+[^,]*?)?) (-?[\d.]+)(?=,|$)")


def events(line: str) -> list[tuple[str, float]]:
    return [(m.group(1), float(m.group(2))) for m in EVENT.finditer(line.split("child: ", 1)[1])]


def phases(text: str) -> str:
    lines = text.splitlines()
    first = events(next(x for x in lines if x.startswith("bench.json child")))
    prof = dict(events(next(x for x in lines if x.startswith("profile/profile.json child"))))
    t: dict[str, float] = {}
    for name, at in first:
        t.setdefault(name, at)
    clock0 = next(at for name, at in first if name.startswith("clock M=") and ":" not in name)
    measure = float(next(x for x in lines if x.strip().startswith("measure ")).split()[1])
    return (
        f"measure {measure:5.1f} | go {t['go']:.2f} ready {t['ready'] - t['go']:.2f} "
        f"prep {t['correctness'] - t['ready']:.2f} correctness {t['bench'] - t['correctness']:.2f} "
        f"bench {t['clock'] - t['bench']:.2f} clockwait {clock0 - t['clock']:.2f} "
        f"clock {t['clock records'] - clock0:.2f} end {t['end'] - t['clock records']:.2f} | "
        f"profile: go {prof['go'] - t['end']:.2f} ready {prof['ready'] - prof['go']:.2f} "
        f"set-up {prof['start: environment'] - prof['ready']:.2f} "
        f"classes {prof['metadata'] - prof['class N=256']:.2f} metadata {prof['end'] - prof['metadata']:.2f} | "
        f"tail {measure - prof['end']:.2f}"
    )


if __name__ == "__main__":
    for path in sorted(Path(sys.argv[1]).glob("*-v?.timeline.txt")):
        print(f"{path.name.removesuffix('.timeline.txt'):32s} {phases(path.read_text())}")
