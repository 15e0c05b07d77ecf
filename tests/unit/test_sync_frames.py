"""Shared UPSERT lines: encoded once per change and content, never shared between different copies."""

from __future__ import annotations

from placement.model import DesiredEntry, ObjectRef
from sync.frames import SharedLines

ENTRY = DesiredEntry(ObjectRef("space", "configmaps", "app", "cm"), "object")


def test_a_change_with_the_same_content_is_encoded_once_for_every_stream() -> None:
    lines, encoded = SharedLines(), []
    obj = {"data": {"k": "v"}}

    def encode() -> bytes:
        encoded.append(1)
        return b"line\n"
    assert [lines.line(7, ENTRY, obj, "3", encode) for _ in range(1000)] == [b"line\n"] * 1000
    assert len(encoded) == 1


def test_a_per_cluster_copy_or_another_change_is_encoded_on_its_own() -> None:
    lines = SharedLines()
    shared, customized = {"data": {"k": "v"}}, {"data": {"k": "v"}}
    assert lines.line(7, ENTRY, shared, "3", lambda: b"shared\n") == b"shared\n"
    # Equal but not the same object: another cluster's copy, which may differ the next time.
    assert lines.line(7, ENTRY, customized, "3", lambda: b"own\n") == b"own\n"
    assert lines.line(8, ENTRY, customized, "3", lambda: b"next change\n") == b"next change\n"
    assert lines.line(8, ENTRY, customized, "3.2", lambda: b"a share\n") == b"a share\n"


def test_the_oldest_lines_go_first_past_the_capacity() -> None:
    lines = SharedLines(capacity=2)
    obj: dict[str, str] = {}
    for seq in (1, 2, 3):
        lines.line(seq, ENTRY, obj, None, lambda s=seq: f"{s}\n".encode())
    assert len(lines) == 2
    assert lines.line(1, ENTRY, obj, None, lambda: b"again\n") == b"again\n"
    assert lines.line(3, ENTRY, obj, None, lambda: b"not encoded\n") == b"3\n"
