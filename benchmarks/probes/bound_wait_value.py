"""Probe (the bound's noise on short calls): queue a batch's calls before the placing ends.

docs/runs/h200-bound-spread-a41b14a/: the first config's bound (a 36 µs softmax, 16 calls a batch)
scatters when the kernel process's host time per call reaches the GPU's. Today (kopt.measure.bound,
GpuOrder) the judge records an interprocess event "placed" after placing the inputs, and only then
sends the order: an event must be recorded before another stream waits on it. The kernel process
then queues its calls while the GPU places (0.66 ms here); once its Python launches fall behind
the GPU, the batch times the launches, whose pace is the host's.

Here the calls are queued first, behind a wait on a word of judge-made memory (cuStreamWaitValue32:
the GPU's front end waits, no SM spins), and the judge writes the word on its own stream after the
placing (cuStreamWriteValue32). The calls: y = 2x on 4096 x 4096 fp32 (64 MB each way, about a
softmax's time). Mode "event" is today's order, mode "value" this one; each with
HOST_US of busy host time before every launch (a Triton launch from Python costs 20-40 µs). Printed
per mode: the batch per call (median, 10th-90th percentile), its calls' part and the placing's
(compare the placing across modes: the worker's stream waits through it); a batch whose read
finds outputs not its own (poisoned before it) gives no figure, and a failed driver call is said
with its CUresult. Run it under `timeout`.

    source benchmarks/gpu_env.sh; timeout -s INT 300 python3 benchmarks/probes/bound_wait_value.py

Written 2026-11-29 on the CPU, not yet run (the session's device time was spent).
"""

import ctypes
import statistics
import time

import torch
import torch.multiprocessing as mp

K, BATCHES, ROWS, COLS = 16, 15, 4096, 4096
GEQ = 0x0  # CU_STREAM_WAIT_VALUE_GEQ


def _driver():
    """cuStreamWaitValue32 and cuStreamWriteValue32 from libcuda (the _v2 names first)."""
    lib = ctypes.CDLL("libcuda.so.1")
    fns = []
    for name in ("cuStreamWaitValue32", "cuStreamWriteValue32"):
        fn = getattr(lib, name + "_v2", None) or getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        fn.restype = ctypes.c_int
        fns.append(fn)
    return fns


def _spin(us: float) -> None:
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def kernel_side(conn, xs, ys, word):
    torch.cuda.init()
    wait_value, _ = _driver()
    done = torch.cuda.Event(interprocess=True)
    conn.send(done.ipc_handle())
    placed = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), conn.recv())
    stream = torch.cuda.current_stream()
    while (msg := conn.recv()) != "end":
        mode, n, host_us = msg
        if mode == "event":
            stream.wait_event(placed)
        else:
            rc = wait_value(ctypes.c_void_p(stream.cuda_stream), word.data_ptr(), n, GEQ)
            if rc:
                conn.send(f"cuStreamWaitValue32 returned {rc}")
                continue
        for x, y in zip(xs, ys, strict=True):
            _spin(host_us)
            torch.mul(x, 2.0, out=y)
        done.record()
        conn.send(None)


def batch(a, mode: str, n: int, host_us: float, parts) -> tuple[float, float, float] | str:
    xs, private, flush, points, ys, word, placed, done, write_value = parts
    stream = torch.cuda.current_stream()
    if mode == "value":  # the calls queued first, behind the word
        a.send((mode, n, host_us))
        said = a.recv()
        if said:
            return said
    for y in ys:  # poisoned where the read looks, on this stream: before the calls in both modes
        y.view(-1)[points] = float("nan")
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    ev[0].record()
    for x, d in zip(xs, private, strict=True):
        x.copy_(d)
    flush.zero_()
    ev[1].record()
    if mode == "event":
        placed.record()
        a.send((mode, n, host_us))
        a.recv()
    else:
        rc = write_value(ctypes.c_void_p(stream.cuda_stream), word.data_ptr(), n, 0)
        if rc:  # the worker's calls released all the same, so the next batch is not stuck behind them
            word.fill_(n)
            torch.cuda.synchronize()
            return f"cuStreamWriteValue32 returned {rc}"
    stream.wait_event(done)
    ev[2].record()
    seen = torch.stack([y.view(-1)[points] for y in ys])
    ev[3].record()
    want = 2 * torch.stack([x.view(-1)[points] for x in xs])
    if not torch.equal(seen, want):  # the calls ran before the placing, or not at all: no figure
        return "the read found outputs that are not this batch's (the wait did not hold the calls)"
    return tuple(ev[i].elapsed_time(ev[j]) * 1e3 / K for i, j in ((0, 3), (1, 2), (0, 1)))


def main() -> None:
    ctx = mp.get_context("spawn")
    xs = [torch.empty(ROWS, COLS, device="cuda") for _ in range(K)]
    ys = [torch.empty_like(x) for x in xs]
    word = torch.zeros(1, dtype=torch.int32, device="cuda")
    private = [torch.randn(ROWS, COLS, device="cuda") for _ in range(K)]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    points = torch.randint(0, ROWS * COLS, (4096,), device="cuda")
    a, b = ctx.Pipe()
    p = ctx.Process(target=kernel_side, args=(b, xs, ys, word), daemon=True)
    p.start()
    b.close()  # a worker that dies ends this side's recv (EOFError), not a wait forever
    done = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), a.recv())
    placed = torch.cuda.Event(interprocess=True)
    a.send(placed.ipc_handle())
    parts = (xs, private, flush, points, ys, word, placed, done, _driver()[1])
    n = 0
    for host_us in (0.0, 40.0):
        for mode in ("event", "value", "event", "value"):
            rows = []
            for _ in range(BATCHES):
                n += 1
                got = batch(a, mode, n, host_us, parts)
                if isinstance(got, str):
                    print(f"{mode}: {got}", flush=True)
                    break
                rows.append(got)
                time.sleep(0.01)
            if len(rows) < 3:
                continue
            tot, calls, place = zip(*rows[1:], strict=True)
            q = statistics.quantiles(tot, n=10)
            print(
                f"host {host_us:4.0f} µs, {mode:5s}: batch {statistics.median(tot):8.2f} µs/call "
                f"(p10-p90 {q[0]:.2f}-{q[-1]:.2f}), calls' part {statistics.median(calls):8.2f}, "
                f"placing {statistics.median(place):7.2f}",
                flush=True,
            )
    a.send("end")
    p.join()


if __name__ == "__main__":
    main()
