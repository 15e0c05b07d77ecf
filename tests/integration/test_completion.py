"""`spacehub completion bash|zsh`: the script a shell sources, tried in a real bash."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.harness import BIN


def complete_in_bash(script: str, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words`` with the completion ``script`` loaded."""
    line = " ".join(words)
    program = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMP_LINE='{line}'; "
               f"COMP_POINT=${{#COMP_LINE}}; _shtab_spacehub spacehub '{words[-1]}' '{words[-2]}'; "
               'printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_bash_completes_commands_and_flags() -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    script = subprocess.run([str(BIN / "spacehub"), "completion", "bash"], capture_output=True, text=True,
                            timeout=30, check=True).stdout
    assert "cluster" in complete_in_bash(script, ["spacehub", "clu"])
    assert "rotate-credentials" in complete_in_bash(script, ["spacehub", "cluster", "rot"])
    assert "--advertise-url" in complete_in_bash(script, ["spacehub", "hub", "serve", "--adv"])


def test_zsh_gets_a_compdef_script() -> None:
    script = subprocess.run([str(BIN / "spacehub"), "completion", "zsh"], capture_output=True, text=True,
                            timeout=30, check=True).stdout
    assert script.startswith("#compdef spacehub")
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed: the script's header is checked, its syntax is not")
    assert subprocess.run(["zsh", "-n"], input=script, text=True, timeout=30).returncode == 0
