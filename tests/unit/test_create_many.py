"""``Objects.create_many`` and a space's default objects (``spaces.seeding``), on a real SQLite log: every object
prepared as ``create`` prepares it and all of them committed together, each refusal reported for its own object;
a new space's namespaces and default roles written in one commit before it is Ready; what a space lacks
written when the runtime starts again; and the writes of one ``write_many`` taken into a batch together."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from apimachinery.errors import StatusError
from apiserver import managedfields, strictdecoding
from apiserver.rbac import bootstrap
from apiserver.schemamemo import SchemaMemo
from apiserver.spacepaths import ROOT
from apiserver.store import Key, LogRow, Write
from apiserver.store.writer import MAX_BATCH, MUST_NOT_EXIST
from apiserver.writeoptions import Creation, DeleteOptions, WriteOptions
from spaces.kind import SPACES
from spaces.runtime import SpaceRuntime
from tests.unit.test_object_reads import on_a_runtime, root_type

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def test_create_many_commits_together_and_answers_for_each_object(tmp_path: Path) -> None:
    async def body(runtime: SpaceRuntime) -> None:
        objects = runtime.objects
        ns_type, cm_type = root_type(runtime, "namespaces"), root_type(runtime, "configmaps")
        await objects.create(ROOT, cm_type, "default", {"metadata": {"name": "taken"}}, WriteOptions())
        outcomes = await objects.create_many(ROOT, [
            Creation(ns_type, "", {"metadata": {"name": "shop"}}),
            # In a namespace written before it in the same call: admitted, under its own field manager.
            Creation(cm_type, "shop", {"metadata": {"name": "a"}, "data": {"k": "v"}}, "robot"),
            Creation(cm_type, "default", {"metadata": {"name": "taken"}}),
            Creation(cm_type, "nowhere", {"metadata": {"name": "b"}}),
            Creation(cm_type, "default", {"metadata": {"name": "Not_A_Name"}}),
            Creation(cm_type, "default", {"metadata": {"generateName": "gen-"}}),
        ], WriteOptions(manager="seeder"))

        namespace, config, taken, nowhere, invalid, generated = outcomes
        assert isinstance(namespace, dict) and isinstance(config, dict) and isinstance(generated, dict)
        assert [o.code for o in (taken, nowhere, invalid) if isinstance(o, StatusError)] == [409, 404, 422]
        revisions = [int(o["metadata"]["resourceVersion"]) for o in (namespace, config, generated)]
        assert revisions == list(range(revisions[0], revisions[0] + 3))  # one commit, in the call's order
        assert generated["metadata"]["name"].startswith("gen-")
        stored = await objects.get(ROOT, cm_type, "shop", "a")
        assert stored["data"] == {"k": "v"} and stored["metadata"]["uid"] == config["metadata"]["uid"]
        assert [e["manager"] for e in stored["metadata"]["managedFields"]] == ["robot"]
        ns = await objects.get(ROOT, ns_type, "", "shop")
        assert [e["manager"] for e in ns["metadata"]["managedFields"]] == ["seeder"]

    on_a_runtime(tmp_path, body)


def run_rbac_runtime(tmp_path: Path, body: Callable[[SpaceRuntime], Awaitable[None]],
                     batches: list[int] | None = None) -> None:
    """``body`` on a started runtime with RBAC (so spaces get the default roles); each commit's size into
    ``batches``."""
    on_a_runtime(tmp_path, body, rbac=True, batches=batches)


async def default_revisions(runtime: SpaceRuntime, space: str) -> list[int]:
    """The revisions of ``space``'s system namespaces and default roles and bindings (each must exist)."""
    found = []
    for resource, names in (
            ("namespaces", SYSTEM_NAMESPACES),
            ("clusterroles.rbac.authorization.k8s.io", [r["metadata"]["name"] for r in bootstrap.cluster_roles()]),
            ("clusterrolebindings.rbac.authorization.k8s.io",
             [b["metadata"]["name"] for b in bootstrap.cluster_role_bindings()])):
        rtype = runtime.catalog.by_group_resource(space, resource)
        assert rtype is not None
        for name in names:
            obj = await runtime.objects.get(space, rtype, "", name)
            found.append(int(obj["metadata"]["resourceVersion"]))
    return found


def test_a_new_space_gets_its_defaults_in_one_commit_before_it_is_ready(tmp_path: Path) -> None:
    batches: list[int] = []

    async def body(runtime: SpaceRuntime) -> None:
        space_type = root_type(runtime, SPACES)
        batches.clear()
        created = await runtime.objects.create(ROOT, space_type, "", {"metadata": {"name": "fresh"}},
                                               WriteOptions())
        assert created["status"]["phase"] == "Ready"
        written = await default_revisions(runtime, "fresh")
        assert max(written) < int(created["metadata"]["resourceVersion"])
        defaults = len(SYSTEM_NAMESPACES) + len(bootstrap.cluster_roles()) + len(bootstrap.cluster_role_bindings())
        # The Space, its defaults, its Ready status: three commits.
        assert batches == [1, defaults, 1]

    run_rbac_runtime(tmp_path, body, batches)


async def defaults_of(runtime: SpaceRuntime, space: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Every object of ``space`` of the kinds its defaults are, without what differs between any two objects
    (uid, creation time, revision, managedFields' time), by (resource, namespace, name)."""
    found = {}
    for resource in ("namespaces", "serviceaccounts", "configmaps", "clusterroles.rbac.authorization.k8s.io",
                     "clusterrolebindings.rbac.authorization.k8s.io"):
        rtype = runtime.catalog.by_group_resource(space, resource)
        assert rtype is not None
        for obj in (await runtime.objects.list(space, rtype, None)).items:
            meta = obj["metadata"]
            for server_field in ("uid", "creationTimestamp", "resourceVersion"):
                meta.pop(server_field)
            for entry in meta["managedFields"]:
                entry.pop("time")
            found[(resource, meta.get("namespace", ""), meta["name"])] = obj
    return found


def test_a_second_space_gets_the_defaults_the_first_got(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second space's defaults hit what the first one's creates kept (managedFields by shape, clean bodies by
    content); what they record is what the first one's computed."""
    async def body(runtime: SpaceRuntime) -> None:
        space_type = root_type(runtime, SPACES)
        monkeypatch.setattr(managedfields, "_CREATED", SchemaMemo(512))
        monkeypatch.setattr(strictdecoding, "_CLEAN", SchemaMemo(256))
        await runtime.objects.create(ROOT, space_type, "", {"metadata": {"name": "first"}}, WriteOptions())
        kept = len(managedfields._CREATED), len(strictdecoding._CLEAN)
        await runtime.objects.create(ROOT, space_type, "", {"metadata": {"name": "second"}}, WriteOptions())
        # Every default a hit; only the Space's own body ("second") is new to the validation memo.
        assert (len(managedfields._CREATED), len(strictdecoding._CLEAN)) == (kept[0], kept[1] + 1)
        first, second = await defaults_of(runtime, "first"), await defaults_of(runtime, "second")
        assert len(first) >= len(SYSTEM_NAMESPACES) + len(bootstrap.cluster_roles())
        assert first == second

    run_rbac_runtime(tmp_path, body)


def test_a_space_gets_what_it_lacks_when_the_runtime_starts_again(tmp_path: Path) -> None:
    async def make_and_damage(runtime: SpaceRuntime) -> None:
        await runtime.objects.create(ROOT, root_type(runtime, SPACES), "", {"metadata": {"name": "old"}},
                                     WriteOptions())
        role_type = runtime.catalog.by_group_resource("old", "clusterroles.rbac.authorization.k8s.io")
        assert role_type is not None
        await runtime.objects.delete("old", role_type, "", "view", DeleteOptions())

    async def check(runtime: SpaceRuntime) -> None:
        await default_revisions(runtime, "old")  # every default there again, "view" included (else 404)

    run_rbac_runtime(tmp_path, make_and_damage)
    run_rbac_runtime(tmp_path, check)


def test_write_many_is_committed_whole_in_batches_of_at_most_max_batch(tmp_path: Path) -> None:
    batches: list[int] = []

    async def body(runtime: SpaceRuntime) -> None:
        batches.clear()
        writes = [Write(Key(ROOT, "configmaps", "default", f"c{i}"), b'{"metadata":{}}', expect=MUST_NOT_EXIST)
                  for i in range(MAX_BATCH + 44)]
        results = await runtime.objects.writer.write_many(writes)
        assert all(isinstance(result, LogRow) for result in results)
        assert batches == [MAX_BATCH, 44]

    run_rbac_runtime(tmp_path, body, batches)
