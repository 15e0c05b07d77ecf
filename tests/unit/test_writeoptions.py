"""The server fields of a new object: uids."""

from __future__ import annotations

import os
import uuid

from apiserver import writeoptions
from apiserver.writeoptions import new_uid


def test_a_uid_is_the_version_4_uuid_of_its_random_bytes() -> None:
    for _ in range(200):
        raw = os.urandom(16)
        writeoptions._UID_ENTROPY[:] = raw  # the next uid takes the last 16 bytes read ahead
        assert new_uid() == str(uuid.UUID(bytes=raw, version=4))
    for raw in (bytes(16), b"\xff" * 16):
        writeoptions._UID_ENTROPY[:] = raw
        assert new_uid() == str(uuid.UUID(bytes=raw, version=4))


def test_uids_differ() -> None:
    uids = {new_uid() for _ in range(1_000)}
    assert len(uids) == 1_000
    assert all(uuid.UUID(u).version == 4 for u in uids)
