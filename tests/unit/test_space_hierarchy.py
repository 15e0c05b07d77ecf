"""Space paths and ids (``apiserver.spacepaths``) and ``kubectl space tree``'s drawing, without a hub."""

from __future__ import annotations

import pytest

from apiserver import spacepaths
from spaces.cli import render_tree


@pytest.mark.parametrize(("path", "space"), [
    ("root", "root"), ("root:team-a", "team-a"), ("team-a", "team-a"), ("root:org:team", "org:team"),
    ("org:team", "org:team"),
])
def test_a_path_and_its_id_name_one_space(path: str, space: str) -> None:
    assert spacepaths.store_id(path) == space
    assert spacepaths.full_path(path) == spacepaths.full_path(space)
    assert spacepaths.store_id(spacepaths.full_path(space)) == space


def test_parents_children_and_depth() -> None:
    assert spacepaths.child_id("root", "team-a") == "team-a"  # where flat spaces always were
    assert spacepaths.child_id("org", "team") == "org:team"
    assert [spacepaths.parent_id(s) for s in ("root", "team-a", "org:team")] == [None, "root", "org"]
    assert [spacepaths.depth(s) for s in ("root", "team-a", "org:team")] == [0, 1, 2]
    assert spacepaths.base_name("org:team") == "team"


def test_children_deeper_or_longer_than_allowed_are_invalid_on_metadata_name() -> None:
    eight = ":".join(f"l{i}" for i in range(1, 9))
    assert spacepaths.child_causes(eight.rpartition(":")[0], "l8") == []
    [cause] = spacepaths.child_causes(eight, "l9")
    assert (cause.type, cause.field) == ("FieldValueInvalid", "metadata.name")
    assert cause.message == (f'Invalid value: "l9": space "root:{eight}:l9" would be 9 levels below root: '
                             "must be no more than 8")
    long = ":".join(c * 63 for c in "abc")  # root: + 3 * 63 + 2 = 196 characters
    assert spacepaths.child_causes(long, "d" * 52) == []  # 249
    [cause] = spacepaths.child_causes(long, "d" * 57)  # 254
    assert "would be 254 characters: must be no more than 253" in cause.message


@pytest.mark.parametrize(("current", "target", "path"), [
    ("root", "team", "root:team"), ("root:org", "team", "root:org:team"), ("root:org", "team:sub", "root:org:team:sub"),
    ("root:org:team", "..", "root:org"), ("root:org", "..", "root"), ("root:org", ":root", "root"),
    ("root:org", ":root:other", "root:other"), ("root:org", "root:other", "root:other"), ("root:org", "root", "root"),
])
def test_paths_resolve_like_kubectl_ws(current: str, target: str, path: str) -> None:
    assert spacepaths.resolve(current, target) == path


@pytest.mark.parametrize(("target", "message"), [
    ("..", "the root space has no parent"), (":org", 'an absolute path starts with ":root"'),
    ("Team", 'invalid space path "Team"'), ("a/b", 'invalid space path "a/b"'), ("a::b", 'invalid space path'),
    ("org:root", '"root" names only the root space'), ("rooted:x", None),
])
def test_paths_that_name_no_space_are_refused(target: str, message: str | None) -> None:
    if message is None:  # a name that merely starts with "root" is relative
        assert spacepaths.resolve("root", target) == f"root:{target}"
        return
    with pytest.raises(ValueError, match=message):
        spacepaths.resolve("root", target)


def test_the_tree_is_drawn_like_kubectl_ws_tree() -> None:
    below = {"root:org": ["team", "web"], "root:org:team": ["sub"]}
    assert render_tree("root:org", lambda path: below.get(path, [])) == [
        ".",
        "└── root:org",
        "    ├── team",
        "    │   └── sub",
        "    └── web",
    ]
