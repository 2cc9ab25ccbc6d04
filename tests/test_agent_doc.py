"""docs/agent.md, the loop in kopt's own commands for an agent: every kopt command it names exists
and runs with --help, and every option it gives that command is one the command takes."""

import re

import pytest

from kopt.cli import main as kopt
from tests.helpers import ROOT

DOC = (ROOT / "docs" / "agent.md").read_text()
COMMANDS = sorted({m.strip() for m in re.findall(r"`(kopt [^`]+)`", DOC) + re.findall(r"^ +(kopt [^#\n]+)", DOC, re.M)})


def _words(command: str) -> tuple[list[str], list[str]]:
    """The subcommand words and the options of a command as the text writes it."""
    words = command.split()[1:]
    sub = []
    for w in words:
        if w.startswith("-") or not re.fullmatch(r"[a-z]+", w):
            break
        sub.append(w)
    return sub, [w for w in words if w.startswith("--")]


def test_the_text_names_the_loops_commands():
    subs = {" ".join(_words(c)[0]) for c in COMMANDS}
    assert {"status", "eval", "new", "experience recommend", "rerun", "mask", "unmask"} <= subs, subs


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_named_exists_and_takes_its_options(command, capsys):
    sub, options = _words(command)
    with pytest.raises(SystemExit) as e:
        kopt([*sub, "--help"])
    assert e.value.code == 0, command
    usage = capsys.readouterr().out
    for opt in options:
        assert opt in usage, f"{command}: `kopt {' '.join(sub)}` has no {opt}"
