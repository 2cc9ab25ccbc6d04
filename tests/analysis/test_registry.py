"""The hardware registry (config/hardware): every figure cited or unknown, device names matched, and
ceilings that prefer the measured figures and never use an unknown one."""

import pytest

from kopt.analysis import registry as hw
from tests.helpers import ROOT


def test_registry_every_figure_cited_or_unknown():
    reg = hw.load_registry(ROOT / "config" / "hardware")
    assert {e["name"] for e in reg} >= {
        "NVIDIA H100 SXM",
        "NVIDIA H100 PCIe",
        "NVIDIA H200",
        "NVIDIA A100 SXM4 80GB",
        "AMD Instinct MI300X",
        "AMD Instinct MI355X",
    }
    for e in reg:
        figs = [e["figures"][k] for k in hw.SCALARS] + [e["figures"]["peak_tflops"][d] for d in hw.DTYPES]
        for f in figs:
            assert (f["value"] == hw.UNKNOWN and f["reason"]) or (f["source"].startswith("http") and f["where"])


def test_registry_rejects_an_uncited_figure(tmp_path):
    bad = (ROOT / "config" / "hardware" / "h100_sxm.yaml").read_text().replace("    source: https", "    src: https", 1)
    (tmp_path / "bad.yaml").write_text(bad)
    with pytest.raises(hw.RegistryError, match=r"bad\.yaml: figures\.memory_bandwidth_gbps"):
        hw.load_registry(tmp_path)


@pytest.mark.parametrize(
    "device,expected",
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA H200", "NVIDIA H200"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_registry_match(device, expected):
    e = hw.match(device, hw.load_registry(ROOT / "config" / "hardware"))
    assert (e["name"] if e else None) == expected


def test_ceilings_prefer_measured_and_never_use_unknown():
    reg = hw.load_registry(ROOT / "config" / "hardware")
    h200 = hw.match("NVIDIA H200", reg)
    c = hw.ceilings(None, h200)
    assert c["memory_gbps"] == 4800 and c["basis"]["memory"] == "cited"
    assert c["compute_tflops"]["fp32"] is None and c["basis"]["fp32"] == "unknown"
    m = hw.ceilings({"copy": {"gbps": 4100.0}, "matmul": {"fp32": {"tflops": 51.0}}}, h200)
    assert m["memory_gbps"] == 4100.0 and m["basis"]["memory"] == "measured" and m["compute_tflops"]["fp32"] == 51.0
    assert hw.ceilings(None, None)["memory_gbps"] is None  # an unknown GPU: measured ceilings only
