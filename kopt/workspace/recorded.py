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
OUTSIDE = "_outside"  # files from outside the workspace (a patch elsewhere), kept but not put back
# what a copy of the workspace leaves out: results trees and attempts of kopt's own
NOT_COPIED = ("results", "runs", "reruns", "attempts", ".snakemake", ".git")


def packages() -> dict[str, str]:
    """Every installed distribution of this interpreter, name (lower case) -> exact version: the
    first of a name on sys.path (the one imported); an entry without a name is left out."""
    found: dict[str, str] = {}
    for d in metadata.distributions():
        name = d.metadata["Name"] if d.metadata else None
        if name and name.lower() not in found:
            found[name.lower()] = d.version
    return dict(sorted(found.items()))


def packages_sha256(pkgs: dict[str, str] | None = None) -> str:
    """One hash of the whole set: two runs with the same packages have the same one."""
    return sha256_json(packages() if pkgs is None else pkgs)


def record(out_dir: str | Path, root: str | Path, files: list[str | Path], **extra) -> dict:
    """Copy ``files`` (inside the workspace ``root``) into ``out_dir``/files/<their path> and write
    the manifest: path -> sha256, the packages, ``extra`` (e.g. a command version's commit)."""
    out, root = Path(out_dir), Path(root).resolve()
    manifest = {"created": now(), "workspace": str(root), "files": {}, "packages": packages(), **extra}
    for f in sorted({Path(p).resolve() for p in files}):
        rel = f.relative_to(root) if f.is_relative_to(root) else Path(OUTSIDE) / f.relative_to(f.anchor)
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
        now_at = Path("/") / Path(rel).relative_to(OUTSIDE) if rel.startswith(OUTSIDE + "/") else Path(root) / rel
        current = sha256_file(now_at) if now_at.is_file() else None
        if current != sha:
            out[rel] = (sha, current)
    return out


def copy_workspace(root: str | Path, dest: str | Path) -> Path:
    """A copy of the workspace without kopt's own results trees and attempts."""
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(*NOT_COPIED))
    return Path(dest)


def materialize(recorded_dir: str | Path, root: str | Path, dest: str | Path, version: int) -> Path:
    """A copy of the workspace ``root`` at ``dest`` with the recorded files of ``version`` put back;
    the earlier versions' files as they are now (they only have to parse), the later ones left out
    (they may not fit the recorded target.yaml)."""
    dest = copy_workspace(root, dest)
    for p in (dest / "kernels").glob("v*.*"):
        if p.stem[1:].isdigit() and int(p.stem[1:]) > version:
            p.unlink()
    for rel in load(recorded_dir)["files"]:
        if rel.startswith(OUTSIDE + "/"):
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(recorded_dir) / "files" / rel, dest / rel)
    return dest
