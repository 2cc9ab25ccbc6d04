"""What the command-target step tests share: a small git repository with two commits."""

import subprocess
from pathlib import Path

import pytest

BENCH = "import sys\nprint('seq_len,err_triton,us_triton')\nprint('4096,0,{us}')\n"


def git_out(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository whose bench.py reports 20 µs at its first commit and 10 µs at its second."""
    r = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    git_out(r, "config", "user.email", "t@example.com")
    git_out(r, "config", "user.name", "t")
    for us in (20, 10):
        (r / "bench.py").write_text(BENCH.format(us=us))
        git_out(r, "add", "bench.py")
        git_out(r, "commit", "-qm", f"{us} us")
    return r
