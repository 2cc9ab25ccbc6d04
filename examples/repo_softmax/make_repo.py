"""Makes this example's git repository (repo/, next to this file, or the folder given) from
source/: the user's own repository as kernel-opt finds it, with its history.

    python3 examples/repo_softmax/make_repo.py [DEST]

Two commits, tagged: `two-pass` (the kernel reads each row twice) and `one-pass` (once); the
benchmark, bench.py, is in both. Author, committer and dates are fixed, so the commits are the
same on every machine. Does nothing when DEST is already a git repository.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WHO = {"GIT_AUTHOR_NAME": "example", "GIT_AUTHOR_EMAIL": "example@example.com", "GIT_COMMITTER_NAME": "example"}
WHO |= {"GIT_COMMITTER_EMAIL": "example@example.com"}
HISTORY = [("kernel_two_pass.py", "two-pass", "Softmax in two passes over each row"),
           ("kernel_one_pass.py", "one-pass", "Softmax in one pass: the row in registers")]  # fmt: skip


def make(dest: Path) -> None:
    if (dest / ".git").exists():
        return
    dest.mkdir(parents=True, exist_ok=True)
    for i, (kernel, tag, message) in enumerate(HISTORY):
        env = {**os.environ, **WHO, "GIT_AUTHOR_DATE": f"2026-11-25T12:0{i}:00Z", "GIT_COMMITTER_DATE": f"2026-11-25T12:0{i}:00Z"}

        def git(*args: str, env=env) -> None:
            subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True, env=env)

        if i == 0:
            git("init", "-q")
            shutil.copyfile(HERE / "source" / "bench.py", dest / "bench.py")
            (dest / ".gitignore").write_text("out/\n__pycache__/\n")
        shutil.copyfile(HERE / "source" / kernel, dest / "kernel.py")
        git("add", "-A")
        git("commit", "-q", "--no-gpg-sign", "-m", message)
        git("tag", tag)


if __name__ == "__main__":
    make(Path(sys.argv[1]) if sys.argv[1:] else HERE / "repo")
