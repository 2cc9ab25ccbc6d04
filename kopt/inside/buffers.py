"""The judge's arena as seen from the kernel's process: the same memory, mapped by handle, and
views at the offsets the judge chose (kopt.measure.arena). The kernel writes its outputs there; the
judge reads them from its own mapping."""

from __future__ import annotations

import mmap
import os

import torch

from kopt.measure.arena import view


def open_arena(handle: dict, fds: list[int]) -> torch.Tensor:
    """The arena as a flat uint8 tensor: by CUDA IPC on a GPU, by the shared-memory descriptor on the CPU."""
    if handle["kind"] == "cuda-ipc":
        from torch.multiprocessing import reductions

        return getattr(reductions, handle["rebuild"])(*handle["args"])
    m = mmap.mmap(fds[0], handle["size"])
    os.close(fds[0])  # the mapping keeps the memory
    return torch.frombuffer(m, dtype=torch.uint8, count=handle["size"])


def views(base: torch.Tensor, slots: dict) -> dict[str, torch.Tensor]:
    """Set tensors from their slots, as the judge made its own (kopt.measure.arena.view)."""
    return {name: view(base, slot) for name, slot in slots.items()}
