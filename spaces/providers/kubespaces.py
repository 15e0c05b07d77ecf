"""Which spaces are kube spaces, and the client of each one's API server.

The index is the Space objects whose ``spec.provider`` is ``kube`` (at start-up, those of the spaces
``SpaceController`` found to be kube spaces, read from the store; then kept current from the watch bus, as
``SpaceController`` keeps its index of spaces). A space's client is built from
its Secret on first use and kept until the Space or that Secret changes; ``listeners`` hear of every such
change (a kube space created, changed, deleted, or its Secret written), so that what reads the space through
the client (the placement mirror) starts over with the new one.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import orjson

from apiserver.service import Objects
from apiserver.spacepaths import base_name, child_id, full_path, parent_id
from apiserver.store import Key
from apiserver.watch import Entry
from spaces.kind import KUBE, SECRET_REF, provider_of
from spaces.providers.upstream import ProviderError, Upstream, upstream_from_kubeconfig

log = logging.getLogger(__name__)
SPACES = "spaces.spacehub.io"
SECRETS = "secrets"


@dataclass(frozen=True)
class KubeSpace:
    id: str  # the space's id (``apiserver.spacepaths``)
    parent: str  # the id of the space holding its Space object and its Secret
    name: str  # the Space object's name
    secret: Key  # the Secret holding the kubeconfig
    key: str  # the Secret's data key

    @property
    def path(self) -> str:
        return full_path(self.id)


def _kube_space(parent: str, obj: dict) -> KubeSpace | None:
    if provider_of(obj) != KUBE:
        return None
    ref = (obj.get("spec") or {}).get(SECRET_REF) or {}
    name = obj["metadata"]["name"]
    return KubeSpace(child_id(parent, name), parent, name,
                     Key(parent, SECRETS, str(ref.get("namespace", "")), str(ref.get("name", ""))),
                     str(ref.get("key", "")))


class KubeSpaces:
    def __init__(self, objects: Objects) -> None:
        self.objects = objects
        self._spaces: dict[str, KubeSpace] = {}
        self._clients: dict[str, tuple[int, Upstream]] = {}  # by space: (the Secret's revision, its client)
        self.listeners: list[Callable[[str], None]] = []

    async def load(self, ids: Iterable[str]) -> None:
        """Read the Space objects of the kube spaces ``ids`` (call at start-up): those the space controller found
        at its load, which decoded every Space (most spaces are not kube spaces)."""
        for space in ids:
            parent = parent_id(space)
            row = None if parent is None else await self.objects.find_row(Key(parent, SPACES, "", base_name(space)))
            found = None if row is None else _kube_space(parent or "", orjson.loads(row.value))
            if found is not None:
                self._spaces[found.id] = found

    def get(self, space: str) -> KubeSpace | None:
        """The kube space ``space`` (an id); None for a built-in space."""
        return self._spaces.get(space)

    def all(self) -> list[KubeSpace]:
        return list(self._spaces.values())

    def on_commit(self, entries: Sequence[Entry]) -> None:
        changed: set[str] = set()
        for entry in entries:
            key = entry.row.key
            if key.resource == SPACES:
                space = child_id(key.space, key.name)
                found = None if entry.row.deleted else _kube_space(key.space, entry.obj())
                if found != self._spaces.get(space):
                    changed.add(space)
                    if found is None:
                        self._spaces.pop(space, None)
                    else:
                        self._spaces[space] = found
            elif key.resource == SECRETS:
                changed.update(s.id for s in self._spaces.values() if s.secret == key)
        for space in changed:
            self._forget_client(space)
            for listener in self.listeners:
                listener(space)

    def _forget_client(self, space: str) -> None:
        cached = self._clients.pop(space, None)
        if cached is not None:
            # Its connections close with it: watches through it end, and their clients watch again with the new one.
            asyncio.get_running_loop().create_task(cached[1].close())

    async def upstream(self, space: str) -> Upstream:
        """The client of kube space ``space``'s API server; ``ProviderError`` when its Secret or kubeconfig
        cannot be used."""
        found = self._spaces.get(space)
        if found is None:
            raise ProviderError("NotKube", f'space "{full_path(space)}" is not a kube space')
        row = await self.objects.find_row(found.secret)
        where = f'Secret "{found.secret.name}" in namespace "{found.secret.namespace}" of space ' \
                f'"{full_path(found.parent)}"'
        if row is None:
            raise ProviderError("SecretNotFound", f"{where} does not exist")
        cached = self._clients.get(space)
        if cached is not None and cached[0] == row.revision:
            return cached[1]
        data = (orjson.loads(row.value).get("data") or {}).get(found.key)
        if not isinstance(data, str):
            raise ProviderError("KubeconfigInvalid", f'{where} has no data key "{found.key}"')
        try:
            text = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ProviderError("KubeconfigInvalid", f'{where}: data key "{found.key}" is not base64') from None
        upstream = upstream_from_kubeconfig(text)
        self._forget_client(space)
        self._clients[space] = (row.revision, upstream)
        return upstream

    async def close(self) -> None:
        clients, self._clients = self._clients, {}
        for _revision, upstream in clients.values():
            await upstream.close()
