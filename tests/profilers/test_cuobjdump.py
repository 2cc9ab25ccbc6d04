"""SASS by cuobjdump on the trusted side, of a real Triton cubin (tests/fixtures/profiles/README.md)."""

import shutil
from pathlib import Path

import pytest

from kopt.profilers import cuobjdump
from kopt.steps.profile import _disassembled

CUBIN = Path(__file__).parents[1] / "fixtures" / "profiles" / "triton_add_sm90.cubin"
needs_tool = pytest.mark.skipif(cuobjdump.tool() is None, reason="no cuobjdump here (Triton's wheel ships one)")


@needs_tool
def test_a_triton_cubin_becomes_its_sass_listing_and_is_not_kept(tmp_path):
    shutil.copy(CUBIN, tmp_path / "add_kernel.0.cubin")
    (tmp_path / "add_kernel.0.ptx").write_text("// ptx\n")
    assert cuobjdump.cubins_to_sass(tmp_path) == {"add_kernel.0.cubin": "add_kernel.0.sass"}
    sass = (tmp_path / "add_kernel.0.sass").read_text()
    assert "code for sm_90a" in sass and "Function : add" in sass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add_kernel.0.ptx", "add_kernel.0.sass"]


@needs_tool
def test_a_file_that_is_no_cubin_is_dropped_and_listed_nowhere(tmp_path):
    (tmp_path / "k.0.cubin").write_bytes(b"not an ELF file")
    specs = [{"function": "k", "asm_files": ["k.0.ptx", "k.0.cubin"]}]
    assert _disassembled(specs, tmp_path)[0]["asm_files"] == ["k.0.ptx"]
    assert not list(tmp_path.iterdir())


@needs_tool
def test_the_kernels_record_names_the_listing_the_judge_wrote(tmp_path):
    shutil.copy(CUBIN, tmp_path / "k.1.cubin")
    specs = [{"function": "k", "asm_files": ["k.1.ttgir", "k.1.cubin"]}]
    assert _disassembled(specs, tmp_path)[0]["asm_files"] == ["k.1.ttgir", "k.1.sass"]


def test_the_tool_that_reads_the_kernels_files_runs_in_the_kernels_sandbox(tmp_path):
    """A cubin is the kernel's process's making: what parses it may write only under its scratch."""
    import subprocess
    import sys

    from kopt.inside import sandbox

    outside, scratch = tmp_path / "outside", tmp_path / "scratch"
    script = f"echo in > {scratch}/in; echo out > {outside}"
    subprocess.run([sys.executable, "-m", "kopt.inside.confined", str(scratch), "/bin/sh", "-c", script], check=False)
    assert (scratch / "in").read_text() == "in\n"
    assert not outside.exists() if sandbox.abi() >= 1 else outside.exists()
