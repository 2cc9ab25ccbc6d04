"""What a version was made from, kept by content in ``results/vN/recorded/`` (rule `recorded`):
copies of its files under their paths in the workspace, their sha256, and the exact versions of
every installed package. `kopt rerun` puts the recorded files back in a copy of the workspace when
they have changed since, so a past version reruns as it was."""

from __future__ import annotations

import json
import shutil
from importlib import metadata
from pathlib import Path

from kopt.workspace.provenance import now, sha256_file, sha256_json

MANIFEST = "manifest.json"
# what a copy of the workspace leaves out: results trees and attempts of kopt's own
NOT_COPIED = ("results", "runs", "reruns", "attempts", ".snakemake", ".git")


def packages() -> dict[str, str]:
    """Every installed distribution of this interpreter, name (lower case) -> exact version."""
    return dict(sorted({d.metadata["Name"].lower(): d.version for d in metadata.distributions()}.items()))


def packages_sha256(pkgs: dict[str, str] | None = None) -> str:
    """One hash of the whole set: two runs with the same packages have the same one."""
    return sha256_json(packages() if pkgs is None else pkgs)


def record(out_dir: str | Path, root: str | Path, files: list[str | Path], **extra) -> dict:
    """Copy ``files`` (inside the workspace ``root``) into ``out_dir``/files/<their path> and write
    the manifest: path -> sha256, the packages, ``extra`` (e.g. a command version's commit)."""
    out, root = Path(out_dir), Path(root).resolve()
    manifest = {"created": now(), "workspace": str(root), "files": {}, "packages": packages(), **extra}
    for f in sorted({Path(p).resolve() for p in files}):
        rel = f.relative_to(root)
        (out / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, out / "files" / rel)
        manifest["files"][str(rel)] = sha256_file(f)
    manifest["packages_sha256"] = packages_sha256(manifest["packages"])
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def load(recorded_dir: str | Path) -> dict:
    return json.loads((Path(recorded_dir) / MANIFEST).read_text())


def changed_since(recorded_dir: str | Path, root: str | Path) -> dict[str, tuple[str, str | None]]:
    """The recorded files whose content in the workspace is not the recorded one now:
    path -> (recorded sha256, sha256 now or None when the file is gone)."""
    out = {}
    for rel, sha in load(recorded_dir)["files"].items():
        now_at = Path(root) / rel
        current = sha256_file(now_at) if now_at.is_file() else None
        if current != sha:
            out[rel] = (sha, current)
    return out


def materialize(recorded_dir: str | Path, root: str | Path, dest: str | Path) -> Path:
    """A copy of the workspace ``root`` at ``dest`` with the recorded files put back (the other
    versions' files stay as they are now: they only have to parse)."""
    dest = Path(dest)
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(*NOT_COPIED))
    for rel in load(recorded_dir)["files"]:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(recorded_dir) / "files" / rel, dest / rel)
    return dest
