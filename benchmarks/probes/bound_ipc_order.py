"""Probe (issue 42, point 4): the bound's batch with the host round trip out of its clock.

Today (kopt.measure.bound) the judge places the inputs, synchronizes, sends the order and waits for
the kernel's process to answer after its own synchronize; then it gathers. Its clock (the judge's
events) holds the GPU idle over both host hand-overs, about a millisecond a batch, whose spread is
most of the bound's. Here the order goes through the GPU instead: the judge records an
interprocess event after placing, the kernel's process makes its stream wait on it, queues the K
calls, records an interprocess event of its own and answers at once; the judge's stream waits on
that event before the gather. The GPU then runs placing, calls and gather back to back.

Both ways, BATCHES batches of K calls of a memory-bound op (256 MB in, 256 MB out), per call:
the batch's time, less the judge's placing and gather, and its spread; the calls' own time (the
kernel process's events back to back) for reference.

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/bound_ipc_order.py
"""

import statistics
import time

import torch
import torch.multiprocessing as mp

K, BATCHES, ROWS, COLS = 32, 15, 262144, 256


def kernel_side(conn, xs, ys):
    torch.cuda.init()
    done = torch.cuda.Event(interprocess=True)
    conn.send(done.ipc_handle())
    placed = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), conn.recv())
    own = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    while (msg := conn.recv()) != "end":
        if msg == "gpu":  # ordered through the GPU: wait for the placing there, answer at once
            torch.cuda.current_stream().wait_event(placed)
        own[0].record()
        for x, y in zip(xs, ys, strict=True):
            torch.mul(x, 2.0, out=y)
        own[1].record()
        if msg == "gpu":
            done.record()
            conn.send(None)
            own[1].synchronize()
        else:
            torch.cuda.synchronize()
            conn.send(None)
        conn.send(own[0].elapsed_time(own[1]) * 1e3 / K)


def main() -> None:
    ctx = mp.get_context("spawn")
    xs = [torch.empty(ROWS, COLS, device="cuda") for _ in range(K)]
    ys = [torch.empty_like(x) for x in xs]
    private = [torch.randn(ROWS, COLS, device="cuda") for _ in range(K)]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    points = torch.randint(0, ROWS * COLS, (4096,), device="cuda")
    a, b = ctx.Pipe()
    p = ctx.Process(target=kernel_side, args=(b, xs, ys))
    p.start()
    done = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), a.recv())
    placed = torch.cuda.Event(interprocess=True)
    a.send(placed.ipc_handle())
    for mode in ("host", "gpu", "host", "gpu"):
        rows = []
        for _ in range(BATCHES):
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
            ev[0].record()
            for x, d in zip(xs, private, strict=True):
                x.copy_(d)
            flush.zero_()
            ev[1].record()
            if mode == "gpu":
                placed.record()
                a.send("gpu")
                a.recv()
                torch.cuda.current_stream().wait_event(done)
            else:
                torch.cuda.synchronize()
                a.send("host")
                a.recv()
            ev[2].record()
            seen = torch.stack([y.view(-1)[points] for y in ys])
            ev[3].record()
            seen.cpu()
            own = a.recv()
            total = ev[0].elapsed_time(ev[3]) * 1e3 / K
            middle = ev[1].elapsed_time(ev[2]) * 1e3 / K
            rows.append((total, middle, own))
            time.sleep(0.01)
        tot, mid, own = zip(*rows, strict=True)
        print(
            f"{mode:4s}: batch {statistics.median(tot):8.2f} µs/call (stdev {statistics.stdev(tot):5.2f}), "
            f"calls part {statistics.median(mid):8.2f} (stdev {statistics.stdev(mid):5.2f}), "
            f"the calls' own events {statistics.median(own):8.2f} (stdev {statistics.stdev(own):5.2f})",
            flush=True,
        )
    a.send("end")
    p.join()


if __name__ == "__main__":
    main()
