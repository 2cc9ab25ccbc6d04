"""The memory the kernel is given, owned by the judge (trusted side).

One arena per config holds every input and output buffer of every input set. The judge allocates
it, fills the inputs, poisons the outputs, and reads them back from its own mapping; the kernel's
process maps the same memory by handle and gets views at the offsets the judge chose
(``layout``): it cannot hand over other buffers, and what it writes there is what is checked.

* GPU: one allocation in a private ``torch.cuda.MemPool``, shared by CUDA IPC. An IPC handle opens
  the whole segment its allocation lies in, so nothing else the judge allocates (the expected
  outputs, the references' inputs) may lie there: the private pool holds arenas only, and it lives
  as long as the judge, so its memory is never handed to anything else while the kernel's process
  could still have it mapped.
* CPU: an anonymous shared-memory file (``memfd_create``), passed as a descriptor.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field

import torch

ALIGN = 512  # every buffer starts on a 512-byte boundary (cudaMalloc gives 256)


@dataclass
class Slot:
    """Where one tensor lies in the arena: what the kernel's process needs to make the same view."""

    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str  # torch dtype name

    def span_bytes(self) -> int:
        if not self.shape or 0 in self.shape:
            return max(1, torch.empty((), dtype=getattr(torch, self.dtype)).element_size())
        last = sum((n - 1) * s for n, s in zip(self.shape, self.stride, strict=True))
        return (last + 1) * getattr(torch, self.dtype).itemsize


def slot_like(t: torch.Tensor, offset: int) -> Slot:
    stride = t.stride() if all(s >= 0 for s in t.stride()) else tuple(t.contiguous().stride())
    return Slot(offset, tuple(t.shape), tuple(stride), str(t.dtype).removeprefix("torch."))


def view(base: torch.Tensor, slot: Slot) -> torch.Tensor:
    """The tensor ``slot`` names in ``base`` (a flat uint8 tensor over the arena)."""
    dt = getattr(torch, slot.dtype)
    raw = base[slot.offset : slot.offset + slot.span_bytes()]
    return raw.view(dt).as_strided(slot.shape, slot.stride)


@dataclass
class Plan:
    """The arena's size and every tensor's slot, per set: ``sets[i][name]``."""

    size: int = 0
    sets: list[dict[str, Slot]] = field(default_factory=list)

    def add(self, like: dict[str, torch.Tensor]) -> dict[str, Slot]:
        slots = {}
        for name, t in like.items():
            s = slot_like(t, self.size)
            slots[name] = s
            self.size += -(-s.span_bytes() // ALIGN) * ALIGN
        self.sets.append(slots)
        return slots


_POOL = {}


def _cuda_pool():
    """The judge's private pool for arenas (made once, kept for the process's life)."""
    if "pool" not in _POOL:
        _POOL["pool"] = torch.cuda.MemPool()
    return _POOL["pool"]


def pool_free_blocks() -> list[int]:
    """The free blocks of the arenas' pool (earlier arenas', freed), in bytes. torch counts them as
    reserved and free (``reference.available_bytes`` counts them out), but only an arena may take
    one, and only an arena no larger: an arena is one allocation, ``empty_cache`` leaves a live
    pool's segments, and the pool is never dropped (on an H200, gpu-mode's grayscale at 16384: 45 GiB
    of the earlier configs' arenas cached there, 85 GiB free, an 88 GiB arena asked for and refused).
    Empty where this torch's pool has no snapshot (sized as before)."""
    if "pool" not in _POOL:
        return []
    try:
        segments = _POOL["pool"].snapshot()  # this pool's segments only
        return [int(b["size"]) for seg in segments for b in seg["blocks"] if b["state"] == "inactive"]
    except (AttributeError, KeyError, RuntimeError, TypeError):
        return []


def pool_cached_bytes() -> int:
    return sum(pool_free_blocks())


def sets_in_a_free_block(one_set: int) -> int:
    """How many sets of ``one_set`` bytes (an arena's plan: n sets take n times that) an arena can
    place in the pool's largest free block: the same config's arena made again (the clock's after
    the bench's) takes the block its last one freed. (torch's allocator rounds it to 512 bytes,
    which a plan is a multiple of, and splits the block: with its default settings.)"""
    return max(pool_free_blocks(), default=0) // max(one_set, 1)


class Arena:
    """One config's shared memory: ``tensors(i)`` are set i's buffers in the judge's mapping;
    ``handle()`` is what the kernel's process needs to map it (with ``fds()`` on the CPU)."""

    def __init__(self, plan: Plan, device: str):
        self.plan, self.device, self.fd = plan, device, None
        size = max(plan.size, ALIGN)
        if device == "cuda":
            with torch.cuda.use_mem_pool(_cuda_pool()):
                self.base = torch.empty(size, dtype=torch.uint8, device="cuda")
        else:
            self.fd = os.memfd_create("kopt-arena", 0)
            os.ftruncate(self.fd, size)
            self.map = mmap.mmap(self.fd, size)
            self.base = torch.frombuffer(self.map, dtype=torch.uint8, count=size)
        self.views = [{n: view(self.base, s) for n, s in slots.items()} for slots in plan.sets]

    def tensors(self, i: int) -> dict[str, torch.Tensor]:
        return self.views[i]

    def handle(self) -> dict:
        if self.device == "cuda":
            from torch.multiprocessing.reductions import reduce_tensor

            fn, args = reduce_tensor(self.base)
            return {"kind": "cuda-ipc", "rebuild": fn.__name__, "args": args, "size": self.base.numel()}
        return {"kind": "memfd", "size": self.base.numel()}

    def fds(self) -> list[int]:
        return [self.fd] if self.fd is not None else []

    def sent(self) -> None:
        """The kernel's process has its own mapping now: the judge's descriptor is no longer needed."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
