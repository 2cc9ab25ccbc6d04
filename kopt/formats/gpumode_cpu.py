"""The CPU configs of a gpu-mode workspace: task.yml's tests the interpreter's gate can run in
minutes, every kind of test kept.

A problem's tests reach sizes a CPU cannot check in reasonable time (linalg/eigh's n = 4096,
amd/moe's hidden size 7168 in every test, bioml/trimul's sequences of 1024: their gates ran 6-12
minutes on a 2-core CPU and were stopped), and what a test costs cannot be read from its
arguments (a GEMM of 5.6e9 multiply-adds passes in seconds, trimul's 1e8 does not). So it is
measured at init (``survey``, in the process kopt.formats.gpumode_workspace starts for it): each
test's ``setup()`` (generate_input and ref_kernel) in a process forked for it, killed after
``LIMIT_S``, cheapest first by an estimate (``cost``) until ``TOTAL_S`` are spent. The CPU configs
(``choose``) are the tests that took at most ``PER_CONFIG_S``, the fastest first while they take
``KEPT_S`` together, then the fastest of each kind (a word or flag argument's value: eigh's
``case``, trimul's ``nomask``) left out. A kind only slower tests have keeps its cheapest test with
its largest argument halved until it runs within ``PER_CONFIG_S`` (an argument whose halving
makes setup() fail is structural and stays); so does the cheapest test where none runs within
it, or the fastest halving found. What was left out or halved is said, one line each.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import select
import signal
import sys
import time

PER_CONFIG_S = 0.5  # setup() of one CPU config at most (the gate runs it and more, per seed)
KEPT_S = 4.0  # setup() of the CPU configs together, but one of each kind (the gate takes about 10x)
TOTAL_S = 20.0  # the survey's measuring, all tests together
HALVINGS = 24  # at most, for one kind's test
LIMIT_S = 4 * PER_CONFIG_S  # one test's setup() is stopped after this: it is not kept anyway


def _ints(spec: dict) -> dict[str, int]:
    return {k: v for k, v in spec.items() if isinstance(v, int) and not isinstance(v, bool)}


def cost(spec: dict) -> int:
    """An estimate to order tests by: the product of the integer arguments (about the elements)
    times the largest (a matrix's work grows with its side too: eigh's n = 4096 comes last)."""
    ints = [max(v, 1) for v in _ints(spec).values()]
    return math.prod(ints) * max(ints, default=1)


def kinds(spec: dict) -> set[tuple[str, object]]:
    """What makes a test another kind: its word and flag arguments' values."""
    return {(k, v) for k, v in spec.items() if isinstance(v, (str, bool))}


def halved(spec: dict, fixed: frozenset[str] = frozenset()) -> tuple[str, dict] | None:
    """``spec`` with its largest integer argument but ``fixed`` halved (rounded up), and which;
    None where all those are 1."""
    ints = {k: v for k, v in _ints(spec).items() if k not in fixed}
    key = max(ints, key=lambda k: ints[k], default=None)
    if key is None or ints[key] <= 1:
        return None
    return key, {**spec, key: (ints[key] + 1) // 2}


def _shrunk(setup, spec: dict) -> tuple[dict, float] | None:
    """``spec`` halved an argument at a time until its setup() runs within ``PER_CONFIG_S``, and
    its seconds; an argument whose halving makes setup() fail is structural (mla-decode's model
    dimension) and is left as it was. Where none gets there, the fastest that ran within
    ``LIMIT_S`` (mla-decode's setup() takes a second and more at any size); else None."""
    fixed: set[str] = set()
    best: tuple[dict, float] | None = None
    for _ in range(HALVINGS):
        step = halved(spec, frozenset(fixed))
        if step is None:
            break
        s = _timed(setup, step[1])
        if s is None:
            fixed.add(step[0])
            continue
        spec = step[1]
        if s <= PER_CONFIG_S:
            return spec, s
        if s <= LIMIT_S and (best is None or s < best[1]):
            best = spec, s
    return best


def survey(setup, specs: list[dict], say, fatal: tuple = ()) -> None:
    """In the survey's process: ``say`` each measured test's index and seconds (``{"i", "s"}``),
    cheapest first until ``TOTAL_S`` are spent; then for each kind no fast test has, its cheapest
    test halved until fast (``{"kind", "spec", "s"}``). Each in a process of its own (``_timed``),
    forked from this one; an error of a class in ``fatal`` on a test as written is raised here
    (``Fatal``): the problem cannot be judged as it is."""
    order = sorted(range(len(specs)), key=lambda i: cost(specs[i]))
    start, fast = time.monotonic(), []
    for i in order:
        if time.monotonic() - start > TOTAL_S:
            break
        s = _timed(setup, specs[i], fatal=fatal)
        s = math.inf if s is None else s  # a test that fails here is not one the CPU runs
        say({"i": i, "s": s})
        if s <= PER_CONFIG_S:
            fast.append(specs[i])
    have = {k for sp in fast for k in kinds(sp)}
    wanted = sorted({k for sp in specs for k in kinds(sp)} - have, key=str) or ([] if fast else [None])
    for kind in wanted:
        if kind is not None and kind in have:
            continue  # a test halved for an earlier kind has it
        # a problem error only at a halved size is that size failing (the argument is structural)
        got = _shrunk(setup, min((sp for sp in specs if kind is None or kind in kinds(sp)), key=cost))
        if got is not None:
            say({"kind": list(kind) if kind else None, "spec": got[0], "s": got[1]})
            have |= kinds(got[0])


class Fatal(Exception):
    """An error of the problem itself (``survey``'s ``fatal``), raised where it was measured."""


def _timed(setup, spec: dict, limit_s: float = LIMIT_S, fatal: tuple = ()) -> float | None:
    """setup()'s seconds on ``spec``, in a process forked for it (its own process group, killed
    with whatever it started); None where it failed or died, infinite where it ran over
    ``limit_s`` and was killed (a test of minutes is not waited for: an alarm in this process
    waited 60 s for one of moe's single operations to end). An error of a class in ``fatal`` is
    raised here as ``Fatal``. Elsewhere than Linux, setup() runs here, without a limit."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return _here(setup, spec, fatal)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the measuring process: its seconds on the pipe, "failed" on an error
        try:
            os.close(r)
            os.setpgid(0, 0)
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the survey
            t0 = time.perf_counter()
            setup(seed=0, **spec)
            os.write(w, repr(time.perf_counter() - t0).encode())
        except fatal as e:  # the problem as written cannot be judged: said as it is
            os.write(w, b"fatal:" + str(e).encode()[:4000])
        except BaseException:  # noqa: BLE001 - the problem's own code: this size does not run
            os.write(w, b"failed")
        finally:
            os._exit(0)
    os.close(w)
    try:
        said = _read(r, limit_s)
    finally:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
    if said is None:
        return math.inf
    if said.startswith(b"fatal:"):
        raise Fatal(said[len(b"fatal:") :].decode("utf-8", "replace"))
    return None if said in (b"", b"failed") else round(float(said), 3)  # b"": it died without a word


def _here(setup, spec: dict, fatal: tuple) -> float | None:
    t0 = time.perf_counter()
    try:
        setup(seed=0, **spec)
    except fatal as e:
        raise Fatal(str(e)) from None
    except Exception:  # noqa: BLE001 - the problem's own code: this size does not run
        return None
    return round(time.perf_counter() - t0, 3)


def _read(fd: int, limit_s: float) -> bytes | None:
    """What the measuring process wrote before it ended (at most 4 KB, one write), or None where
    nothing came within ``limit_s``. Not to the pipe's end: a process setup() started may hold it."""
    if not select.select([fd], [], [], limit_s)[0]:
        return None
    return os.read(fd, 8192)


def choose(specs: list[dict], said: list[dict]) -> tuple[list[dict], list[str]]:
    """The CPU configs from the survey's lines ``said`` (as many as it made before its limit):
    the fast tests cheapest first while their setup() together stays within ``KEPT_S``, then the
    fastest test of each kind not among them (halved where only slower tests have it); in
    task.yml's order, the halved ones last; and what was changed, one line each."""
    timed = sorted((d for d in said if "i" in d and d["s"] <= PER_CONFIG_S), key=lambda d: d["s"])
    keep, spent = set(), 0.0
    for d in timed:
        if spent + d["s"] <= KEPT_S:
            keep.add(d["i"])
            spent += d["s"]
    have = {k for i in keep for k in kinds(specs[i])}
    for d in timed:  # the fastest of each kind the budget left out
        if kinds(specs[d["i"]]) - have:
            keep.add(d["i"])
            have |= kinds(specs[d["i"]])
    kept, notes = [sp for i, sp in enumerate(specs) if i in keep], []
    if len(kept) < len(specs):
        notes.append(
            f"{len(specs) - len(kept)} of {len(specs)} tests left out on the CPU: the fastest kept while their "
            f"setup() took {KEPT_S:g} s together, one of each kind, none over {PER_CONFIG_S:g} s"
        )
    for d in (d for d in said if "spec" in d and (d["kind"] is None or tuple(d["kind"]) not in have)):
        why = (
            f"no test ran within {PER_CONFIG_S:g} s: the cheapest"
            if d["kind"] is None
            else f"{d['kind'][0]}={d['kind'][1]!r}: only slower tests have it; its cheapest"
        )
        big = min((sp for sp in specs if d["kind"] is None or tuple(d["kind"]) in kinds(sp)), key=cost)
        changed = ", ".join(f"{k} {big[k]} -> {d['spec'][k]}" for k in big if big[k] != d["spec"][k])
        notes.append(f"{why}, {changed} ({d['s']:g} s{'' if d['s'] <= PER_CONFIG_S else ', the fastest found'})")
        kept.append(d["spec"])
        have |= kinds(d["spec"])
    return kept, notes
