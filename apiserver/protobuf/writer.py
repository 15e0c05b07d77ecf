"""The protobuf wire format, writing side: a message built field by field, proto3 style.

Scalar fields at their default value (empty string, false, zero) are left out as Go's
``proto.Marshal`` leaves them out; sub-messages and ``oneof`` members are written whenever given,
because their presence is what they say.
"""

from __future__ import annotations

import struct

from apiserver.protobuf.wire import FIXED64, LEN, VARINT


def varint(value: int) -> bytes:
    """``value`` as an unsigned varint; negative numbers as their 64-bit two's complement, as int64 is."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


class MessageWriter:
    """Collects the encoded fields of one message; :meth:`finish` joins them."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def string(self, number: int, value: str) -> None:
        if value:
            self.message(number, value.encode())

    def strings(self, number: int, values: list[str]) -> None:
        """A repeated string field: every element, empty ones included."""
        for value in values:
            self.message(number, value.encode())

    def boolean(self, number: int, value: bool, *, always: bool = False) -> None:
        """A bool field; ``always`` writes ``false`` too (a ``oneof`` member must say it is set)."""
        if value or always:
            self._parts += [_key(number, VARINT), b"\x01" if value else b"\x00"]

    def int64(self, number: int, value: int) -> None:
        if value:
            self._parts += [_key(number, VARINT), varint(value)]

    def double(self, number: int, value: float) -> None:
        if value:
            self._parts += [_key(number, FIXED64), struct.pack("<d", value)]

    def message(self, number: int, encoded: bytes) -> None:
        """A length-delimited field: an encoded sub-message (written even when empty) or raw bytes."""
        self._parts += [_key(number, LEN), varint(len(encoded)), encoded]

    def finish(self) -> bytes:
        return b"".join(self._parts)
