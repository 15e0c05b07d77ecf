"""``kubectl space current`` when the current space is gone, going, or may not be looked up (hub answers
injected; the real hub is in tests/integration/test_cli_spaces.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kubeclient import kubeconfig
from spaces import cli
from spaces.client import HubClient, HubError

SERVER = "https://127.0.0.1:1/clusters/team-a"


def _answering(error: Exception) -> Callable[[HubClient], cli.SpaceCheck]:
    def remote_check(client: HubClient) -> cli.SpaceCheck:
        def check(name: str) -> None:
            raise error
        return check
    return remote_check


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config"
    kubeconfig.save(path, kubeconfig.build_kubeconfig(SERVER, None, "tok", "hub"))
    return path


def test_a_deleted_space_is_an_error_saying_how_to_leave(config_file: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "remote_check", _answering(cli.SpaceMissing('space "team-a" does not exist')))
    assert cli.kubectl_space_main(["current", "--kubeconfig", str(config_file)]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == \
        ("", "error: the current space \"root:team-a\" no longer exists; run 'kubectl space use root'\n")


def test_a_terminating_space_is_still_current_with_a_warning(config_file: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "remote_check", _answering(cli.SpaceTerminating('space "team-a" is being deleted')))
    assert cli.kubectl_space_main(["current", "--kubeconfig", str(config_file)]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("root:team-a\n", 'Warning: space "team-a" is being deleted\n')


def test_not_being_allowed_to_read_spaces_still_prints_the_space(config_file: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "remote_check", _answering(HubError(403, "Forbidden", "no")))
    assert cli.kubectl_space_main(["current", "--kubeconfig", str(config_file)]) == 0
    assert capsys.readouterr().out == "root:team-a\n"
    monkeypatch.setattr(cli, "remote_check", _answering(HubError(500, "InternalError", "boom")))
    assert cli.kubectl_space_main(["current", "--kubeconfig", str(config_file)]) == 1
    assert capsys.readouterr().err == "Error from server (InternalError): boom\n"
