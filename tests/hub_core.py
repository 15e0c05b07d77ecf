"""The hub's core (store, placement, status) started in the test's own event loop, without HTTP.

For unit tests of the hub's services: objects are written through the same object service the API
uses, on a real SQLite database in the test's temporary directory; results are polled with a deadline
(``tests.polling.eventually``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from apiserver.writeoptions import DeleteOptions, WriteOptions
from hub.app import HubCore, HubSettings

EDGE = "edge.kubestellar.io/v2alpha1"


@contextlib.asynccontextmanager
async def hub_core(tmp_path: Path) -> AsyncIterator[HubCore]:
    core = HubCore(HubSettings(db_url=f"sqlite:///{tmp_path / 'hub.db'}", admin_token="test-admin-token"))
    await core.start()
    try:
        yield core
    finally:
        await core.stop()


def _rtype(core: HubCore, space: str, obj: dict[str, Any]) -> Any:
    group, _, _version = obj["apiVersion"].rpartition("/")
    rtype = core.catalog.by_kind(space, group, obj["kind"])
    assert rtype is not None, obj["kind"]
    return rtype


async def create(core: HubCore, space: str, *objs: dict[str, Any]) -> None:
    for obj in objs:
        await core.objects.create(space, _rtype(core, space, obj), obj["metadata"].get("namespace", ""), obj,
                                  WriteOptions(manager="test"))


async def update(core: HubCore, space: str, obj: dict[str, Any]) -> None:
    """Replace the object with ``obj`` (no resourceVersion precondition)."""
    await core.objects.update(space, _rtype(core, space, obj), obj["metadata"].get("namespace", ""),
                              obj["metadata"]["name"], obj, WriteOptions(manager="test"))


async def get(core: HubCore, space: str, api_version: str, kind: str, name: str,
              namespace: str = "") -> dict[str, Any] | None:
    """The object, or None when it does not exist."""
    return await core.objects.find(space, _rtype(core, space, {"apiVersion": api_version, "kind": kind}),
                                   namespace, name)


async def delete(core: HubCore, space: str, api_version: str, kind: str, name: str, namespace: str = "") -> None:
    rtype = _rtype(core, space, {"apiVersion": api_version, "kind": kind})
    await core.objects.delete(space, rtype, namespace, name, DeleteOptions())


def placement(name: str, location_labels: dict[str, str], downsync: list[dict[str, Any]],
              **spec: Any) -> dict[str, Any]:
    return {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
            "spec": {"locationSelectors": [{"matchLabels": location_labels}], "downsync": downsync, **spec}}


async def listed(core: HubCore, space: str, api_version: str, kind: str, namespace: str | None = None
                 ) -> list[dict[str, Any]]:
    rtype = _rtype(core, space, {"apiVersion": api_version, "kind": kind})
    return (await core.objects.list(space, rtype, namespace)).items
