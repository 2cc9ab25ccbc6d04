import pytest


@pytest.fixture
def attack_log(tmp_path, monkeypatch):
    """Where an attack logs that it ran (tests/fixtures/attacks/_base.py), in a folder its sandbox lets it write."""
    kernel_dir = tmp_path / "kernel"
    kernel_dir.mkdir()
    monkeypatch.setenv("KOPT_ATTACK_LOG", str(kernel_dir / "attack.log"))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(kernel_dir))
    return kernel_dir / "attack.log"
