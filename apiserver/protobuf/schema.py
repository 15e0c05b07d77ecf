"""The vocabulary of the field tables: what one protobuf field of a Kubernetes message is in JSON.

A message is described by a :data:`Table`, one row per field: its field number, the JSON name Go's
``encoding/json`` gives it, its kind and a few :class:`Opt` flags that reproduce how the Go struct field
is encoded (``omitempty`` or not, pointer or value, slice, embedded inline). Those are what decide whether
an absent field shows up as ``null``, ``{}``, ``0`` or not at all, so the decoder can emit exactly what
``json.Marshal`` would have emitted for the typed object kubectl serialized.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from apiserver.protobuf import wire


class Kind(enum.Enum):
    """Scalar kinds, plus apimachinery's hand-written types whose JSON form is not their message form."""

    STRING = "string"
    BYTES = "bytes"  # []byte: base64 in JSON
    BOOL = "bool"
    INT32 = "int32"
    INT64 = "int64"
    DOUBLE = "double"
    TIME = "time"  # metav1.Time {seconds, nanos}: RFC 3339 string, null when zero
    QUANTITY = "quantity"  # resource.Quantity {string}: the string
    INT_OR_STRING = "int-or-string"  # intstr.IntOrString {type, intVal, strVal}: a number or a string
    FIELDS_V1 = "fields-v1"  # metav1.FieldsV1 {Raw}: the raw JSON it carries

    @property
    def wire_type(self) -> int:
        if self in (Kind.BOOL, Kind.INT32, Kind.INT64):
            return wire.VARINT
        if self is Kind.DOUBLE:
            return wire.FIXED64
        return wire.LEN


STRING, BYTES, BOOL, INT32, INT64, DOUBLE = Kind.STRING, Kind.BYTES, Kind.BOOL, Kind.INT32, Kind.INT64, Kind.DOUBLE
TIME, QUANTITY, INT_OR_STRING, FIELDS_V1 = Kind.TIME, Kind.QUANTITY, Kind.INT_OR_STRING, Kind.FIELDS_V1


class Opt(enum.Flag):
    """How the Go field is declared; no flag means a plain ``omitempty`` value field."""

    NONE = 0
    LIST = enum.auto()  # a slice: repeated on the wire
    PTR = enum.auto()  # a pointer: present-but-zero is kept, absent is omitted (or null with KEEP)
    KEEP = enum.auto()  # no omitempty: zero values, nil slices/maps/pointers are emitted (as null when nil)
    INLINE = enum.auto()  # an embedded struct: its own message on the wire, its fields merged into ours in JSON
    OMITZERO = enum.auto()  # omitzero: a zero struct (a zero Time) is left out


NONE, LIST, PTR, KEEP, INLINE, OMITZERO = Opt.NONE, Opt.LIST, Opt.PTR, Opt.KEEP, Opt.INLINE, Opt.OMITZERO


@dataclass(frozen=True)
class MapOf:
    """A Go map: on the wire, repeated entry messages with the key as field 1 and the value as field 2."""

    key: Kind
    value: Kind | str


# A message kind is named by its table key, "<group>.<Type>" (see apiserver.protobuf.tables).
FieldKind = Kind | MapOf | str


@dataclass(frozen=True)
class Field:
    number: int
    json: str
    kind: FieldKind
    opts: Opt = NONE

    @property
    def wire_type(self) -> int:
        return self.kind.wire_type if isinstance(self.kind, Kind) else wire.LEN


# Field number -> field, in the Go struct's declaration order (which is the JSON member order).
Table = dict[int, Field]


def table(*rows: tuple[int, str, FieldKind] | tuple[int, str, FieldKind, Opt]) -> Table:
    """Build a table from ``(number, json name, kind[, options])`` rows."""
    out: Table = {}
    for row in rows:
        field = Field(*row)
        if field.number in out:
            raise ValueError(f"field number {field.number} listed twice")
        out[field.number] = field
    return out
