"""The device a child computes on (kopt.measure.device): the GPU CUDA gave it must be the one the
gate claimed, or the job fails without a verdict on the kernel."""

from types import SimpleNamespace

import pytest

from kopt.measure import device
from kopt.measure.faults import HarnessFault

CLAIMED = "GPU-b5985e46-2b4b-da6a-7526-7d6fab3a4cc8"  # nvidia-smi's form, as on the H100


def _gpu(monkeypatch, uuid: str, name: str = "NVIDIA H100 80GB HBM3") -> None:
    monkeypatch.setattr(device.torch.cuda, "get_device_properties", lambda i: SimpleNamespace(uuid=uuid))
    monkeypatch.setattr(device.torch.cuda, "get_device_name", lambda i: name)


def test_the_claimed_gpu_passes(monkeypatch):
    _gpu(monkeypatch, "b5985e46-2b4b-da6a-7526-7d6fab3a4cc8")  # torch's form of the same UUID
    device.check_binding(CLAIMED)


def test_another_gpu_is_a_harness_fault(monkeypatch):
    _gpu(monkeypatch, "0c7a1d2e-0000-1111-2222-333344445555")
    with pytest.raises(HarnessFault, match=f"not on {CLAIMED}, which the gate claimed"):
        device.check_binding(CLAIMED)


def test_a_mig_instance_is_not_checked(monkeypatch):
    _gpu(monkeypatch, "0c7a1d2e-0000-1111-2222-333344445555", "NVIDIA A100-SXM4-40GB MIG 1g.5gb")
    device.check_binding(CLAIMED)
