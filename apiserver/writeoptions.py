"""What a write to the object store is asked with (options, a batch create's items), and the server fields every new
object gets (uid, timestamps): shared by the object service and the components that prepare objects for it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from apiserver.identity import Identity
from apiserver.resourcetypes import ResourceType

_UID_ENTROPY = bytearray()  # random bytes read ahead for new_uid


def new_uid() -> str:
    """A random (version 4) UUID, as uuid.uuid4 makes it, from entropy read 4 KiB at a time: one getrandom
    call per create was a measurable part of its CPU. Its text is formatted here from the bytes with the version
    and variant bits set, as ``uuid.UUID(bytes=…, version=4)`` sets them, at a third of that class's cost (a new
    space takes 24)."""
    if not _UID_ENTROPY:
        _UID_ENTROPY.extend(os.urandom(4096))
    raw = _UID_ENTROPY[-16:]
    del _UID_ENTROPY[-16:]
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # the RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_last_timestamp: tuple[int, str] = (0, "")


def now_rfc3339() -> str:
    """The current time as Kubernetes writes it (RFC 3339, whole seconds); formatted once a second."""
    global _last_timestamp
    second = int(time.time())
    if _last_timestamp[0] != second:
        _last_timestamp = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _last_timestamp[1]


@dataclass
class WriteOptions:
    dry_run: bool = False
    manager: str = ""
    field_validation: str = "Strict"  # Strict | Warn | Ignore
    warnings: list[str] = field(default_factory=list)
    # Server-side apply computed managedFields itself (an Apply entry); do not record an Update.
    apply: bool = False
    user: Identity | None = None  # who asked (None: the server itself); admission may check what they hold


@dataclass
class DeleteOptions:
    propagation: str = "Background"  # Background | Foreground | Orphan
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    user: Identity | None = None  # who asked (None: the server itself, e.g. the garbage collector)


class Creation(NamedTuple):
    """One object for ``Objects.create_many``: its type, its namespace ("" when cluster-scoped), its body, and the
    field manager it is recorded under when not the call's."""
    rtype: ResourceType
    namespace: str
    obj: dict[str, Any]
    manager: str | None = None
