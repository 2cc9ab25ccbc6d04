"""``kopt init DIR`` with nothing to import: a workspace to edit, in the style of the published
skill template (a ``ref.py`` with ``setup``/``reference``, a Triton ``run_kernel`` as v0, a CUDA
``solve`` ready to become v1), its ``target.yaml`` explaining each field. The files are
kopt/formats/template/, copied as they are."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from kopt.formats import staged


def init(dest: Path, check=None) -> list[str]:
    """The workspace at ``dest`` (absent or empty); what it holds, as lines."""
    with staged(dest, check) as staging, resources.as_file(resources.files("kopt.formats") / "template") as src:
        shutil.copytree(src, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return [
        f"{dest}: a float32 vector add to edit: ref.py (setup, reference), kernels/v0.py (Triton run_kernel), "
        "kernels/v1.cu.example (a CUDA solve: rename to v1.cu to make it v1), target.yaml (each field explained)",
    ]
