"""The kernel's process: ``python -m kopt.inside FD``, started by the judge (kopt.measure.boundary).

It runs the kernel's calls the judge orders, on the judge's buffers, and answers with what it saw
(its own times). It holds no expected output, no tolerance and no verdict, and writes no result:
a kernel that patches anything here changes only what this process says about itself.

Order of a life: ``start`` (the sandbox, before anything of the kernel's is imported), ``go``
(the GPU binding; the kernel is imported), then ``config`` (the arena's views for a config),
``call`` (one call on input set j), ``batch`` and ``prep`` (the bound's), ``null``,
``trace_begin``/``trace_end``, ``metadata``, ``drop`` (the last config's arena let go), until
``bye`` or the judge's end.
"""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import sys
import time
import traceback

from kopt.measure.faults import HarnessFault, KernelFault
from kopt.measure.reaper import die_with_parent
from kopt.measure.wire import recv_pickle, send_json


class Session:
    def __init__(self, sock: socket.socket, clock: bool = False, confined: str | None = None):
        self.sock, self.kernel, self.guard, self.lab = sock, None, None, None
        self.clock = clock  # a deciding clock's process (``_clock_context``)
        self.confined = confined  # the sandbox's line where kopt.inside.confined applied it before Python started
        self.device, self.sets, self.order, self.outputs, self.with_buffers = "cpu", [], [], [], True
        self.casts_floats = False  # a returned float of another width cast into the buffer (gpu-mode's checks)
        self.seq, self.spin = 0, False
        self.batch_events = None  # the bound's interprocess events on a GPU (``_prep``)
        self.notes_sent = 0  # of the interpreter's notes (``_new_notes``)

    def reply(self, **msg) -> None:
        send_json(self.sock, {**msg, **self._new_notes(), "seq": self.seq})

    def _new_notes(self) -> dict:
        """The interpreter's lines on how it ran the kernel unlike a GPU (kopt.inside.interpreter.NOTES:
        a launch torch.compile could not hold) not sent yet, with the next answer: the judge records them."""
        interpreter = sys.modules.get("kopt.inside.interpreter")  # imported on the CPU only
        fresh = interpreter.NOTES[self.notes_sent :] if interpreter else []
        self.notes_sent += len(fresh)
        return {"notes": fresh} if fresh else {}

    def next_order(self, fds: list[int] | None = None) -> dict:
        msg = recv_pickle(self.sock, fds, spin=self.spin)
        self.seq = msg.get("seq", 0)
        self.spin = bool(msg.get("spin_next"))  # the bound's batches: the next order is polled for
        return msg

    def start(self, msg: dict) -> None:
        from kopt.inside import sandbox

        os.makedirs(msg["scratch"], exist_ok=True)
        os.environ["TMPDIR"] = msg["scratch"]
        if msg.get("warm_up"):  # the clock's first launch, before any code of the kernel's is imported
            _warm_up(msg["warm_up"])
        if msg.get("confined") and self.confined:  # started through kopt.inside.confined: confined before Python
            line = self.confined
        elif msg.get("sandbox"):  # forked from a spare (one thread), or kopt.inside.confined did not run
            line = sandbox.apply(msg["scratch"]) + sandbox.loose_threads()
            line += "; not confined before its Python started, as the judge asked" if msg.get("confined") else ""
        else:
            line = "none: off"
        self.reply(sandbox=line)
        import torch  # noqa: F401 - paid while the judge waits for the GPU gate

        # after the sandbox: Triton's driver library comes from the version's cache, which its kernel writes
        _triton_ready() if self.clock else _triton_key()

    def go(self, msg: dict) -> None:
        os.environ.update(msg["env"])
        import kopt.measure.device as harness
        from kopt.inside import kernels
        from kopt.inside.guard import Guard

        self.device = harness.select_device(msg["device"])
        if self.device == "cpu":
            if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
                raise KernelFault(
                    "device auto chose the CPU here (a GPU device file, but torch sees no GPU) after this process "
                    "had imported Triton compiled (kopt.measure.child._interpreted): run it with device=cpu in the "
                    "config, and the Triton interpreter runs from the process's start"
                    if msg["device"] == "auto"
                    else f"device={msg['device']}, but this process was started without TRITON_INTERPRET=1 and had "
                    "imported Triton compiled: whoever starts it for the CPU must set it (kopt.measure.child._interpreted)"
                )
            os.environ["TRITON_INTERPRET"] = "1"
            from kopt.inside import interpreter

            interpreter.install(msg["kernel"])
        kernels.BUILT.update(msg.get("builds") or {})
        from kopt.formats import set_tf32

        set_tf32(bool(msg.get("tf32")))  # before the kernel is imported
        self.guard = Guard(extra_modules=_own_modules())
        if msg["kernel"].startswith("torch:"):
            from kopt.measure.variants import load_reference

            self.kernel = kernels.torch_baseline(load_reference(msg["ref"]), msg["kernel"].split(":", 1)[1])
            self.guard.allow_threads = True  # torch.compile keeps compile worker threads
        else:
            self.kernel = kernels.load_variant(msg["kernel"])
        self.guard.check(f"{msg['kernel']}: on import")
        # what is alive now (torch, Triton, the kernel's module: 170k objects) left out of every later
        # collection: the judge's ``drop`` before each config's pool collects the calls' cycles, a full
        # collection here 66-80 ms on a 2-core CPU (the drop 69-108 ms on an H200's host), twelve in a
        # rule `measure` of six configs; 0.0 ms after the freeze (benchmarks/probes/gc_freeze_pace.py)
        gc.freeze()
        self.reply(device=self.device, tf32=_tf32_now())

    def config(self, msg: dict, fds: list[int]) -> None:
        from kopt.inside.buffers import open_arena, views
        from kopt.inside.calls import Lab
        from kopt.inside.kernels import select_config

        self.sets = []  # the last config's views go first
        base = open_arena(msg["handle"], fds)
        self.sets = [views(base, slots) for slots in msg["slots"]]
        self.order, self.outputs, self.with_buffers = msg["order"], msg["outputs"], msg["with_buffers"]
        self.casts_floats = bool(msg.get("casts_floats"))
        select_config(self.kernel, msg["config"])
        if self.lab is None or (self.lab.flush is not None) != (msg["flush_l2"] and self.device == "cuda"):
            self.lab = Lab(self.device, msg["flush_l2"])
        self.reply(l2=self.lab.l2.record())

    def _args(self, index: int, scalars: dict) -> dict:
        """The call's arguments: set ``index``'s buffers, and its scalars, in setup()'s order."""
        tensors = self.sets[index]
        args = {n: tensors[n] if n in tensors else scalars[n] for n in self.order}
        if self.with_buffers:
            args.update({n: tensors[n] for n in self.outputs if n not in args})
        return args

    def call(self, msg: dict) -> None:
        from kopt.inside.calls import event_time_us, plain_call

        tensors = self.sets[msg["set"]]
        args = self._args(msg["set"], msg["scalars"])
        if msg.get("reset_l2") and self.lab is not None:  # the clock's calls (kopt.measure.outside_clock)
            self.lab.l2.reset()
        try:
            with _nvtx(msg.get("nvtx")):
                if msg["timed"]:
                    t = event_time_us(
                        lambda: self.kernel(**args),
                        self.device,
                        lab=self.lab,
                        spin_cycles=msg.get("spin_cycles", 0),
                        profiled=msg.get("profiled", False),
                    )
                else:
                    t = plain_call(lambda: self.kernel(**args), self.device)
        except KernelFault:
            raise
        except Exception as e:
            raise KernelFault(self._explain(e)) from e
        bad = self._keep_returned(t.ret, tensors)
        self.guard.check(msg["where"])
        self.reply(us=t.us, host_us=t.host_us, idle=t.idle, returned_bad=bad)

    def batch(self, msg: dict) -> None:
        """The bound's batch (kopt.measure.bound): every named set called back to back, with no
        spin, events or synchronize between the calls, then one device-wide synchronize. What it
        answers is only how many calls it made and its own host time: the judge times the batch."""
        from kopt.inside.calls import back_to_back
        from kopt.measure.device import paused_gc

        calls = [self._args(j, sc) for j, sc in zip(msg["sets"], msg["scalars"], strict=True)]
        events = self.batch_events if self.device == "cuda" else None
        with paused_gc():
            if events:  # the judge's placing first, on the GPU: no host hand-over under its clock
                events.wait_for_placed()
            try:
                host_us, rets = back_to_back(self.kernel, calls, self.device)
            except KernelFault:
                raise
            except Exception as e:
                raise KernelFault(self._explain(e)) from e
            bad = [self._keep_returned(r, self.sets[j], sync=False) for r, j in zip(rets, msg["sets"], strict=True)]
            if events:
                events.record_done()  # the judge's read waits for it on the GPU; answered at once
            elif self.device == "cuda":
                import torch

                torch.cuda.synchronize()
        self.guard.check(msg["where"])
        self.reply(calls=len(calls), host_us=host_us, returned_bad=next((b for b in bad if b), None))

    def _explain(self, e: Exception) -> str:
        if self.device == "cpu":
            from kopt.inside import interpreter

            hint = interpreter.explain(e, self.kernel)
            if hint:
                return hint
        return f"run_kernel raised {type(e).__name__}: {e}"

    def _keep_returned(self, ret, tensors: dict, sync: bool = True) -> str | None:
        """Outputs the kernel returned, copied into the judge's buffers (after the timing), or why not;
        a float of another width cast where the reference says its check compares values only."""
        import torch

        from kopt.measure.reference import returned_tensors

        got = returned_tensors(ret)
        if got is None:
            return None
        named = got if isinstance(got, dict) else dict(zip(self.outputs, got, strict=False))
        for name in self.outputs:
            t, dst = named.get(name), tensors[name]
            if t is None:
                return f"output '{name}' was not returned ({len(named)} tensor(s) returned)"
            if tuple(t.shape) != tuple(dst.shape):
                return f"output '{name}': shape {tuple(t.shape)} differs from the reference's {tuple(dst.shape)}"
            if t.dtype != dst.dtype and not (self.casts_floats and t.is_floating_point() and dst.is_floating_point()):
                got, want = (str(x).removeprefix("torch.") for x in (t.dtype, dst.dtype))
                return f"output '{name}': dtype {got} differs from the reference's {want}"
            dst.copy_(t)
        if self.device == "cuda" and sync:
            torch.cuda.synchronize()
        return None


def _tf32_now() -> dict:
    """The switches as they stand (after the kernel's import: a version may have turned them on)."""
    import torch

    return {
        "matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


@contextlib.contextmanager
def _nvtx(names: list[str] | None):
    """The NVTX ranges a wrapping profiler (Nsight Compute) selects this call by."""
    if not names:
        yield
        return
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # ncu saves the memory a replayed kernel can reach: give back the cache first
    for n in names:
        torch.cuda.nvtx.range_push(n)
    try:
        yield
    finally:
        for _ in names:
            torch.cuda.nvtx.range_pop()


def _own_modules():
    import kopt.measure.device as device
    import kopt.measure.wire as wire
    from kopt.inside import buffers, calls, kernels, l2, metadata

    return (
        sys.modules[__name__],
        buffers,
        calls,
        kernels,
        l2,
        metadata,
        device,
        wire,
        Session,
        calls.Lab,
        l2.PersistingL2,
    )


def _serve(s: Session) -> None:
    while True:
        fds: list[int] = []
        msg = s.next_order(fds)
        op = msg["op"]
        if op == "bye":
            with contextlib.suppress(Exception):  # the judge's arena let go as this process leaves
                _drop(s, msg)
            return
        if op == "config":
            s.config(msg, fds)
        elif op == "call":
            s.call(msg)
        elif op == "batch":
            s.batch(msg)
        elif op in EXTRA:
            s.reply(**EXTRA[op](s, msg))
        else:
            getattr(s, op)(msg)


def _null(s: Session, msg: dict) -> dict:
    from kopt.inside.calls import null_event_us

    return {"us": null_event_us()}


def _trace_begin(s: Session, msg: dict) -> dict:
    from kopt.inside.calls import Trace

    try:
        s.trace = Trace()
    except Exception as e:  # noqa: BLE001 - the profiler is a cross-check: the judge records it missing
        return {"unavailable": f"{type(e).__name__}: {e}"}
    return {"ok": True}


def _trace_end(s: Session, msg: dict) -> dict:
    try:
        s.trace.end(msg["path"])
    except Exception as e:  # noqa: BLE001 - as above
        return {"unavailable": f"{type(e).__name__}: {e}"}
    s.guard.check(msg["where"])
    return {"ok": True}


def _metadata(s: Session, msg: dict) -> dict:
    from pathlib import Path

    from kopt.inside.metadata import _jit_functions, triton_metadata

    names = [
        getattr(f, "__name__", None) or getattr(getattr(f, "fn", None), "__name__", "?")
        for f in _jit_functions(s.kernel)
    ]
    asm = Path(msg["asm_dir"]) if msg.get("asm_dir") else None
    return {"triton": triton_metadata(s.kernel, asm), "jit_names": names}


def _prep(s: Session, msg: dict) -> dict:
    """Before a bound batch (kopt.measure.bound): the persisting-L2 carve-out reset; on a GPU, the
    batch's two interprocess events (the judge's "placed", opened here once; this process's "done",
    whose handle goes back)."""
    if s.lab is not None:
        s.lab.l2.reset()
    if msg.get("placed") is None or s.device != "cuda":
        return {"ok": True}
    from kopt.inside.calls import BatchEvents

    if s.batch_events is None or s.batch_events.placed_handle != msg["placed"]:
        s.batch_events = BatchEvents(msg["placed"])
    return {"ok": True, "done": s.batch_events.done_handle.hex()}  # the answer is JSON


def _drop(s: Session, msg: dict) -> dict:
    """Before the judge sizes the next config's pool (kopt.measure.trial): this process's mapping
    of the last config's arena let go, and its own cached GPU memory released. The judge's arena
    stays allocated while any process maps it (torch keeps a shared block until its consumers let
    go), so the next pool was sized beside it and a version's batches shrank by what the kernel's
    process still held (H100: 16 sets against 32, an honest gain unresolved). Dropping its views
    was enough where no call had been made (tests/gpu/test_gpu_memory.py), not in a whole rule
    `measure` (docs/runs/h100-decision-first/call5/): a reference cycle of the calls still held
    them (the Guard's thread check, since fixed in kopt.inside.guard._working; the collection stays
    for cycles a kernel makes). With the collection here every pool of a whole rule was sized with
    only its own config's memory allocated (H100, call6/: 32 sets each, the clock's 8)."""
    s.sets = []
    if s.device == "cuda":
        import torch

        gc.collect()  # views a reference cycle of the calls still holds (see the docstring)
        torch.cuda.empty_cache()
    return {"ok": True}


EXTRA = {
    "null": _null,
    "trace_begin": _trace_begin,
    "trace_end": _trace_end,
    "metadata": _metadata,
    "prep": _prep,
    "drop": _drop,
}


def _clock_context() -> bool:
    """A deciding clock's process (kopt.measure.outside_clock) imports torch and makes its CUDA
    context as it starts, all of them at once while the judge is busy; no launch (Nsight Compute
    profiles one process at a time: launches of several at once fail with 'a driver resource was
    unavailable'). No code of the kernel's has run yet, nor anything loaded from the version's
    cache: Triton's driver library, which its kernel can write there, waits for ``Session.start``
    (a process forked from a spare is confined only there). Whether this is such a process."""
    if not os.environ.pop("KOPT_CLOCK_CONTEXT", None):
        return False
    import torch

    torch.empty(1, device="cuda")  # the context and the allocator: no kernel launch
    torch.cuda.synchronize()
    return True


def _triton_key() -> None:
    """Triton's own cache key, a hash of its installation (its 400 MB library: 0.3 s), which a
    Triton kernel's first call in a process computes to find its compiled code: computed while the
    judge waits, no code of the kernel's run yet. Only with a GPU build of torch (the interpreter
    compiles nothing: nor where the judge said the interpreter runs, kopt.measure.child._interpreted);
    nothing where Triton is not installed."""
    import torch

    if (torch.version.cuda is None and torch.version.hip is None) or os.environ.get("TRITON_INTERPRET") == "1":
        return
    with contextlib.suppress(Exception):
        from triton.runtime.cache import triton_key

        triton_key()


def _triton_ready() -> None:
    """Triton's compiler modules imported and its driver's utilities loaded (from the version's
    cache: only once sandboxed), as the first call of a Triton kernel would: no launch, so all the
    clock's processes do it at once, before their turn; nothing where Triton is not installed."""
    with contextlib.suppress(Exception):
        import triton.compiler.compiler  # noqa: F401 - imported by a first call otherwise
        from triton.runtime import driver

        device = driver.active.get_current_device()
        driver.active.get_current_stream(device)
        driver.active.utils  # noqa: B018 - loads (or builds once per cache) its helper library
    _triton_key()


def _warm_up(range_name: str) -> None:
    """The clock's warm-up launch, ordered by the judge one process at a time: Nsight Compute sets
    itself up at a process's first profiled launch (0.6 s on the H100). The record's first launch, the
    judge's to drop; inside ``range_name``, which a baseline's clock alone times."""
    import torch

    with torch.cuda.nvtx.range(range_name):
        torch.ones(1, device="cuda")
    torch.cuda.synchronize()


def main(fd: int) -> None:
    die_with_parent()  # again, where kopt.inside.confined (or the spare) did not set it
    confined = os.environ.pop("KOPT_CONFINED", None)  # before anything else runs here
    s = Session(socket.socket(fileno=fd), clock=_clock_context(), confined=confined)
    try:
        s.start(s.next_order())
        order = s.next_order()
        if order["op"] != "bye":  # a clock process the judge no longer needs leaves before its go
            s.go(order)
            _serve(s)
        code = 0
    except (KernelFault, HarnessFault) as e:
        with contextlib.suppress(OSError):
            s.reply(fault=str(e), harness=isinstance(e, HarnessFault))
        code = 3
    except EOFError:
        code = 0  # the judge is done with this process
    except BaseException as e:  # noqa: BLE001 - whatever the kernel did wrong is its fault
        tb = traceback.extract_tb(e.__traceback__)
        where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        with contextlib.suppress(OSError):
            s.reply(fault=f"{type(e).__name__}: {e}{where}")
        traceback.print_exc()
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(0)
    os._exit(code)
