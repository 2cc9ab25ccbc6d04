"""Rule `build` (rules/build.smk): compile a CUDA (.cu) or HIP (.hip) version into a shared library.

nvcc for the detected GPU (``-arch=sm_90a`` on an H100), ``-O3 -lineinfo --ptxas-options=-v``; the
compiler's log is kept, ptxas's registers, spills and shared memory per kernel recorded for the
profile, SASS written by cuobjdump. The signature of ``solve`` is read before anything compiles.
A bad signature or a compile error is a failed build whose error is the compiler's first error
lines; the correctness step then fails the version with it, and no child starts. Without a
compiler the build says so (status ``no-compiler``): on a machine without a GPU the version is
then reported as needing one, not failed. HIP goes through hipcc the same way; it is untested
here (no AMD GPU).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path

from kopt.profilers import gpus, ptxas
from kopt.profilers.cuobjdump import disassemble
from kopt.steps.common import run_group, write_json
from kopt.workspace.cuda_source import SignatureError, solve_params
from kopt.workspace.provenance import now, sha256_file

DEFAULT_CUDA_ARCH = "sm_90a"  # without a GPU to ask: the H100's, so the source is still compiled and checked


def find_nvcc(setting: str = "auto") -> str | None:
    """nvcc: the configured path, else on PATH, else $CUDA_HOME/bin, else the nvidia-cuda-nvcc wheel."""
    if setting != "auto":
        return shutil.which(setting)
    candidates = [shutil.which("nvcc"), Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc"]
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations if spec and spec.submodule_search_locations else []:
        candidates += sorted(Path(root).glob("cu*/bin/nvcc"), reverse=True)
    return next((str(c) for c in candidates if c and Path(c).is_file()), None)


def cuda_arch(setting: str = "auto") -> tuple[str, str]:
    """(arch, where it came from): the configured one, else the GPU's compute capability
    (``a`` suffix from sm_90 on, for the architecture-specific instructions), else sm_90a."""
    if setting != "auto":
        return setting, "config"
    cap = (gpus.query_gpu(["compute_cap"]) or {}).get("compute_cap")
    if not cap or "." not in cap:
        return DEFAULT_CUDA_ARCH, "no NVIDIA GPU answered: compiled for the H100 to check the source"
    major, minor = cap.split(".", 1)
    return f"sm_{major}{minor}{'a' if int(major) >= 9 else ''}", f"nvidia-smi compute_cap {cap}"


def hip_arch(setting: str = "auto") -> tuple[str, str]:
    if setting != "auto":
        return setting, "config"
    agents = gpus.smi(["rocm_agent_enumerator"]) or ""
    gfx = [a for a in agents.split() if a.startswith("gfx") and a != "gfx000"]
    return (gfx[0], "rocm_agent_enumerator") if gfx else ("gfx942", "no AMD GPU answered: compiled for the MI300X")


def compile_command(kernel: Path, library: Path, compiler: str, arch: str, flags: list[str]) -> list[str]:
    """The compiler's command line for one version's shared library."""
    if kernel.suffix == ".hip":
        return [
            compiler,
            f"--offload-arch={arch}",
            *flags,
            "-fPIC",
            "-shared",
            "-Rpass-analysis=kernel-resource-usage",
            str(kernel),
            "-o",
            str(library),
        ]
    cmd = [compiler, f"-arch={arch}", *flags, "--ptxas-options=-v", "-Xcompiler", "-fPIC", "-shared"]
    top = Path(compiler).resolve().parent.parent
    if not (top / "lib64").is_dir() and (top / "lib" / "libcudart_static.a").is_file():  # the wheels' layout
        cmd.append(f"-L{top / 'lib'}")
    return [*cmd, str(kernel), "-o", str(library)]


def first_errors(log: str, n: int = 4) -> str:
    """The compiler's first error lines (else its first lines), joined into one."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines
    return " | ".join(errors[:n])


def build(*, version: str, kernel: str, out_dir: str, settings: dict) -> dict:
    """Compile ``kernel`` into ``out_dir``/vN.so and write ``out_dir``/build.json (kopt.workspace.records.Build)."""
    src, out = Path(kernel), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    opts = settings["build"]
    doc: dict = {"version": version, "kernel": kernel, "status": "failed", "error": None, "compiler": None}
    doc.update(arch=None, arch_from=None, command=None, library=None, solve=[], kernels=[], sass=None, seconds=None)
    doc["provenance"] = {"kernel_sha256": sha256_file(src), "created": now(), "settings": settings}
    try:
        doc["solve"] = [p.describe() for p in solve_params(src)]
    except SignatureError as e:
        return _done(doc, out, error=str(e))
    hip = src.suffix == ".hip"
    compiler = shutil.which(opts["hipcc"]) if hip else find_nvcc(opts["nvcc"])
    if compiler is None:
        name = "hipcc" if hip else "nvcc"
        return _done(doc, out, status="no-compiler", error=f"{src}: {name} not found (set build.{name} in the config)")
    doc["arch"], doc["arch_from"] = hip_arch(opts["arch"]) if hip else cuda_arch(opts["arch"])
    library = out / f"{src.stem}.so"
    doc.update(compiler=compiler, command=compile_command(src, library, compiler, doc["arch"], opts["flags"]))
    t0 = time.perf_counter()
    compile_log = out / "compile.log"
    with open(compile_log, "w") as f:
        f.write(" ".join(doc["command"]) + "\n")
        f.flush()
        code = run_group(doc["command"], cwd=None, out=f, timeout_s=settings["timeout_s"])
    doc["seconds"] = round(time.perf_counter() - t0, 2)
    text = compile_log.read_text()
    print(text)  # the rule's log (stdout is redirected there)
    if code is None:
        return _done(doc, out, error=f"{src}: the compiler ran past the time limit ({settings['timeout_s']} s)")
    if code != 0:
        return _done(doc, out, error=f"{src}: does not compile: {first_errors(text.split(chr(10), 1)[-1])}")
    doc.update(library=str(library), kernels=[] if hip else ptxas.parse(text))
    doc["sass"] = None if hip else disassemble(library, out / f"{src.stem}.sass", compiler)
    return _done(doc, out, status="ok")


def _done(doc: dict, out: Path, status: str = "failed", error: str | None = None) -> dict:
    doc.update(status=status, error=error)
    write_json(out / "build.json", doc)
    return doc
