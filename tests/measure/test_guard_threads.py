"""The Guard's threads tripwire (kopt.inside.guard._working): a library's own thread waiting
between its jobs is no background work; any other thread left running, or waiting, is."""

import importlib.util
import threading
import time

import pytest

from kopt.inside.guard import Guard, _working
from kopt.measure.faults import KernelFault

LOOP = """import threading

STOP = threading.Event()


def run():
    while not STOP.wait(0.05):
        pass
"""


def _started(target) -> threading.Thread:
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


def _loaded(path):
    spec = importlib.util.spec_from_file_location(f"kopt_test_{path.parent.name}_monitor", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tqdms_monitor_waiting_is_idle_and_the_same_loop_elsewhere_is_working(tmp_path):
    """tqdm's monitor (tqdm/_monitor.py, run: an Event.wait loop) left by a torch.compile'd
    submission on the H100 is idle; the same loop in the kernel's own file is a thread left working."""
    mods = []
    for name in ("tqdm", "mine"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "_monitor.py").write_text(LOOP)
        mods.append(_loaded(tmp_path / name / "_monitor.py"))
    before = set(threading.enumerate())
    library, own = (_started(m.run) for m in mods)
    try:
        for _ in range(1000):  # until both wait (a thread under load may still be starting)
            busy = _working(before)
            if library not in busy:
                break
            time.sleep(0.001)
        assert library not in busy and own in busy, [t.name for t in busy]
    finally:
        for m in mods:
            m.STOP.set()


def test_inductors_worker_timer_asleep_is_idle_and_while_it_calls_is_working():
    """torch.compile's Timer (subproc_worker_timer: it shuts idle compile workers down) left by a
    submission on the H100: asleep between its checks it is idle; running its call it is working."""
    from torch._inductor.compile_worker.timer import Timer

    calling, release = threading.Event(), threading.Event()

    def call():
        calling.set()
        release.wait()

    before = set(threading.enumerate())
    timer = Timer(0.2, call)  # sleeps 0.1 s between checks, calls after 0.2 s without an event
    timer.record_call()
    try:
        thread = timer.background_thread
        for _ in range(100):  # until it sleeps (it may still be starting)
            if thread not in _working(before):
                break
            time.sleep(0.001)
        assert thread not in _working(before) and not calling.is_set()
        assert calling.wait(5)
        assert thread in _working(before), "a timer running its call is working"
    finally:
        timer.quit()
        release.set()


def test_a_thread_started_after_another_ended_is_new_though_it_takes_its_ident():
    """An ended thread's ident goes to the next thread started (glibc reuses its stack): the check
    compared idents, so a thread the kernel started after one alive at the Guard's start had ended
    passed as old (CI: torch's timer thread took the ident of a thread alive before it)."""
    stop = threading.Event()
    for _ in range(20):  # until the ident is reused (every time on glibc; another thread may take it)
        ended = threading.Event()
        earlier = _started(ended.wait)
        guard = Guard()
        ended.set()
        earlier.join()
        later = _started(lambda: stop.wait(5))
        if later.ident == earlier.ident:
            break
    try:
        assert later.ident == earlier.ident, "no ident reused in 20 tries: the case this test is for did not arise"
        with pytest.raises(KernelFault, match="left a background thread running"):
            guard.check("a call")
    finally:
        stop.set()


def test_a_check_keeps_no_frame_of_its_caller_alive():
    """The thread check read this thread's frame too: a cycle (its own frame holds the frames it
    read) kept the caller's frame, and the kernel's returned outputs in it, alive until Python's
    next collection. On the H100 KernelBench's GELU held three 6 GiB outputs that way and ran out of
    memory. With collection off, the caller's local is gone the moment it returns."""
    import gc
    import weakref

    class Output:
        pass

    guard = Guard()

    def call():
        ret = Output()
        guard.check("a call")
        return weakref.ref(ret)

    was = gc.isenabled()
    gc.disable()
    try:
        assert call()() is None
    finally:
        if was:
            gc.enable()
