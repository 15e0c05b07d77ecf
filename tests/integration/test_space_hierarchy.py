"""Spaces inside spaces (``root:org:team``) through real ``kubectl``, ``kubectl space`` and ``spacehub``
subprocesses against a running hub: creating, entering with absolute and relative paths, drawing the tree,
serving at both URL forms, deleting a space with everything below it, finalizers on Spaces, and the depth,
length and name rules."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Hub, wait_for
from tests.integration.test_access_control import make_user
from tests.integration.test_cli_spaces import Tools, tools_for


@pytest.fixture
def tools(request: pytest.FixtureRequest, tmp_path: Path) -> Tools:
    return tools_for(request, tmp_path)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _space(name: str) -> str:
    return json.dumps({"apiVersion": "spacehub.io/v1alpha1", "kind": "Space", "metadata": {"name": name}})


def _in(tools: Tools, path: str, *argv: str, ok: bool = True, stdin: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    """Plain kubectl against the space at ``path``, whichever space the kubeconfig is in."""
    return tools.kubectl("--server", f"{tools.base_url}/clusters/{path}", *argv, ok=ok, stdin=stdin)


def _get(tools: Tools, path: str, *argv: str) -> dict[str, Any] | None:
    """An object as JSON from the space at ``path``; None when kubectl cannot get it (gone, or its space)."""
    got = _in(tools, path, "get", *argv, "-o", "json", ok=False)
    return json.loads(got.stdout) if got.returncode == 0 else None


def _ready(tools: Tools, parent: str, name: str) -> None:
    wait_for(lambda: ((_get(tools, parent, "space", name) or {}).get("status") or {}).get("phase") == "Ready",
             timeout=30, message=f"space {parent}:{name} Ready")


def test_nested_spaces_are_created_entered_drawn_and_deleted_with_kubectl(tools: Tools) -> None:
    org = _name("org")
    try:
        entered = tools.kubectl("space", "create", org, "--enter")
        assert entered.stdout == f'space.spacehub.io/{org} created\nCurrent space is "root:{org}".\n'
        # `create` makes a child of the current space; plain kubectl sees it as a Space in this space.
        assert tools.kubectl("space", "create", "team").stdout == "space.spacehub.io/team created\n"
        _ready(tools, f"root:{org}", "team")
        assert tools.kubectl("get", "spaces", "-o", "name").stdout == "space.spacehub.io/team\n"
        team = _get(tools, f"root:{org}", "space", "team")
        assert team is not None and team["status"]["url"] == f"{tools.base_url}/clusters/root:{org}:team"

        # Relative, parent, previous and absolute paths.
        assert tools.kubectl("space", "use", "team").stdout == f'Current space is "root:{org}:team".\n'
        assert tools.server() == f"{tools.base_url}/clusters/root:{org}:team"
        assert tools.kubectl("space", "current").stdout == f"root:{org}:team\n"
        tools.kubectl("create", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "only-in-team", "namespace": "default"}}))
        assert tools.kubectl("space", "use", "..").stdout == f'Current space is "root:{org}".\n'
        assert tools.kubectl("get", "configmap", "only-in-team", ok=False).returncode != 0
        assert tools.kubectl("space", "use", "-").stdout == f'Current space is "root:{org}:team".\n'
        assert tools.kubectl("get", "configmap", "only-in-team", "-o", "name").stdout == "configmap/only-in-team\n"
        assert tools.kubectl("space", "use", ":root").stdout == 'Current space is "root".\n'
        assert tools.kubectl("space", "use", f"{org}:team").stdout == f'Current space is "root:{org}:team".\n'
        missing = tools.kubectl("space", "use", "team", ok=False)  # relative: root:org:team:team
        assert (missing.returncode, missing.stderr) == (1, f'error: space "root:{org}:team:team" does not exist\n')
        assert tools.kubectl("space", "use", f":root:{org}").stdout == f'Current space is "root:{org}".\n'

        # The space's id (its path below root) is served too: kubeconfigs written before spaces nested work.
        assert _in(tools, f"{org}:team", "get", "configmap", "only-in-team", "-o", "name").stdout == \
            "configmap/only-in-team\n"

        tools.kubectl("space", "create", "team:sub")
        tools.kubectl("space", "create", f":root:{org}:web")
        _ready(tools, f"root:{org}:team", "sub")
        assert tools.kubectl("space", "tree").stdout == (
            ".\n"
            f"└── root:{org}\n"
            "    ├── team\n"
            "    │   └── sub\n"
            "    └── web\n")
        assert tools.kubectl("space", "tree", "team").stdout == f".\n└── root:{org}:team\n    └── sub\n"
        listed = tools.kubectl("space", "list").stdout.splitlines()
        assert [line.split()[:2] for line in listed] == [["NAME", "PHASE"], ["team", "Ready"], ["web", "Ready"]]

        # `spacehub space` reads paths from root, with or without `root:`.
        assert tools.spacehub("space", "list", org, "-o", "name").stdout == \
            "space.spacehub.io/team\nspace.spacehub.io/web\n"
        kubeconfig = tools.spacehub("space", "kubeconfig", f"root:{org}:team:sub").stdout
        assert f"server: {tools.base_url}/clusters/root:{org}:team:sub\n" in kubeconfig

        # Deleting a space deletes every space below it, bottom-up.
        assert tools.spacehub("space", "delete", org, "--wait").stdout.startswith(f'space.spacehub.io "{org}" deleted')
        for path in (f"root:{org}", f"root:{org}:team", f"root:{org}:team:sub", f"{org}:web"):
            gone = _in(tools, path, "get", "configmaps", ok=False)
            assert gone.returncode == 1 and "(NotFound)" in gone.stderr
        again = tools.kubectl("space", "use", "team:sub", ok=False)
        assert again.stderr == f'error: space "root:{org}:team:sub" does not exist\n'
    finally:
        tools.kubectl("space", "use", "root")
        tools.spacehub("space", "delete", org, "--wait", ok=False)


def test_a_finalizer_on_a_nested_space_holds_it_and_the_spaces_above_it(tools: Tools) -> None:
    org = _name("fin")
    tools.spacehub("space", "create", org)
    tools.spacehub("space", "create", f"{org}:team")
    _ready(tools, f"root:{org}", "team")
    _in(tools, f"root:{org}", "patch", "space", "team", "--type", "merge",
        "-p", '{"metadata":{"finalizers":["example.com/hold"]}}')
    # Finalizers of the objects inside a space do not hold it: a space's contents go with it.
    _in(tools, f"root:{org}:team", "create", "-f", "-", stdin=json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "held", "namespace": "default", "finalizers": ["example.com/never"]}}))
    try:
        tools.spacehub("space", "delete", org)

        def team_emptied_and_held() -> bool:
            team = _get(tools, f"root:{org}", "space", "team")
            return (team is not None and team["status"]["phase"] == "Terminating"
                    and _get(tools, f"root:{org}:team", "configmap", "held") is None)

        wait_for(team_emptied_and_held, timeout=30, message="team Terminating, its contents gone")
        top = _get(tools, "root", "space", org)
        assert top is not None and top["status"]["phase"] == "Terminating"
        assert top["metadata"]["deletionTimestamp"]
        listed = tools.spacehub("space", "list").stdout.splitlines()
        assert [org, "Terminating"] in [line.split()[:2] for line in listed]
        # No new space below a terminating one.
        refused = _in(tools, f"root:{org}", "create", "-f", "-", stdin=_space("late"), ok=False)
        assert refused.returncode == 1
        assert (f'Error from server (Forbidden): error when creating "STDIN": spaces.spacehub.io "late" is forbidden: '
                f"unable to create new content in space root:{org} because it is being terminated") in refused.stderr

        _in(tools, f"root:{org}", "patch", "space", "team", "--type", "json",
            "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
        wait_for(lambda: _get(tools, "root", "space", org) is None, timeout=30, message=f"space {org} gone")
        assert _get(tools, f"root:{org}", "space", "team") is None
    finally:
        _in(tools, f"root:{org}", "patch", "space", "team", "--type", "merge", "-p", '{"metadata":{"finalizers":null}}',
            ok=False)
        tools.spacehub("space", "delete", org, "--wait", ok=False)


def test_depth_path_length_and_names_are_validated_as_kube_does(tools: Tools) -> None:
    top = _name("deep")
    try:
        path = f"root:{top}"
        tools.spacehub("space", "create", top)
        for level in range(2, 9):  # root:top:l2:…:l8 is 8 levels below root, the most there may be
            tools.spacehub("space", "create", f"{path}:l{level}")
            path = f"{path}:l{level}"
        too_deep = _in(tools, path, "create", "-f", "-", stdin=_space("l9"), ok=False)
        assert too_deep.returncode == 1
        assert (f'The Space "l9" is invalid: metadata.name: Invalid value: "l9": space "{path}:l9" would be 9 '
                "levels below root: must be no more than 8") in too_deep.stderr

        long_path = f"root:{top}"
        for letter in "abc":
            tools.spacehub("space", "create", f"{long_path}:{letter * 63}")
            long_path = f"{long_path}:{letter * 63}"
        too_long = _in(tools, long_path, "create", "-f", "-", stdin=_space("d" * 50), ok=False)
        assert too_long.returncode == 1
        assert f'The Space "{"d" * 50}" is invalid: metadata.name: Invalid value: "{"d" * 50}": the path of space ' \
               in too_long.stderr
        assert "characters: must be no more than 253" in too_long.stderr

        colon = _in(tools, f"root:{top}", "create", "-f", "-", stdin=_space("a:b"), ok=False)
        assert colon.returncode == 1
        assert 'The Space "a:b" is invalid: metadata.name: Invalid value: "a:b": a lowercase RFC 1123 label' \
            in colon.stderr
        rooted = _in(tools, f"root:{top}", "create", "-f", "-", stdin=_space("root"), ok=False)
        assert rooted.returncode == 1 and "metadata.name: Forbidden" in rooted.stderr
        invalid = tools.kubectl("space", "use", "Bad_Name", ok=False)
        assert invalid.returncode == 1 and 'error: invalid space path "Bad_Name"' in invalid.stderr
    finally:
        tools.spacehub("space", "delete", top, "--wait", ok=False)


def test_entering_a_nested_space_is_a_permission_in_its_parent(hub: Hub, tools: Tools, tmp_path: Path) -> None:
    org = _name("acl")
    tools.spacehub("space", "create", org)
    tools.spacehub("space", "create", f"{org}:team")
    _ready(tools, f"root:{org}", "team")
    try:
        user = make_user(hub, tmp_path, f"dev-{org}", f"{org}:team", "edit")
        cfg = user.kubeconfig.read_text()
        assert f"server: {hub.base_url}/clusters/root:{org}:team\n" in cfg
        made = user.kubectl("create", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine", "namespace": "default"}}))
        assert made.returncode == 0, made.stderr
        # Access to root:org:team is granted in root:org, and gives nothing in root:org itself.
        status = user.get(f"/clusters/root:{org}/api/v1/namespaces/default/configmaps").json()
        assert status["code"] == 403
        assert (f'entering space "root:{org}" needs "access" on spaces/content "{org}" in space "root"'
                in status["message"])
        assert user.get(f"/clusters/{org}:team/api/v1/namespaces/default/configmaps").status_code == 200
    finally:
        tools.spacehub("space", "delete", org, "--wait", ok=False)
