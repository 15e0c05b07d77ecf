"""Protobuf request bodies in, the JSON object kube would have decoded out.

A body is the magic ``k8s\\x00`` followed by a ``runtime.Unknown`` envelope whose ``raw`` holds the
object's own message. The object is decoded against the field tables of :mod:`apiserver.protobuf.tables`
in two steps per message: :meth:`_Decoder.collect` reads the wire (checking wire types, refusing field
numbers the table does not list), then :meth:`_Decoder.emit` walks the table in Go declaration order and
applies ``encoding/json``'s rules, so the result equals ``json.Marshal`` of the typed object kubectl
serialized: omitempty zero values left out, value structs always present (``"resources": {}``), nil
pointers, slices and maps without omitempty as ``null``, map keys sorted.

The tables hold no recursive message, so nesting depth is bounded by them, not by the body.
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from apimachinery.errors import StatusError, bad_request
from apiserver.protobuf import wire
from apiserver.protobuf.schema import (
    BYTES,
    FIELDS_V1,
    INLINE,
    INT_OR_STRING,
    KEEP,
    LIST,
    OMITZERO,
    PTR,
    QUANTITY,
    STRING,
    TIME,
    Field,
    Kind,
    MapOf,
)
from apiserver.protobuf.tables import KINDS, MESSAGES, proto_name
from apiserver.resourcetypes import ResourceType

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# The hand-written apimachinery types: the table of their wire message.
_SPECIAL_TABLES = {TIME: "meta.Time", QUANTITY: "resource.Quantity", INT_OR_STRING: "intstr.IntOrString",
                   FIELDS_V1: "meta.FieldsV1"}
# resource.ParseQuantity's grammar, as its error message states it.
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SCALAR_ZERO: dict[Kind, Any] = {Kind.STRING: "", Kind.BOOL: False, Kind.INT32: 0, Kind.INT64: 0, Kind.DOUBLE: 0.0}


def supports(rtype: ResourceType) -> bool:
    """Whether protobuf bodies of ``rtype`` can be decoded."""
    return (rtype.api_version, rtype.kind) in KINDS


def decode_protobuf_body(body: bytes, rtype: ResourceType) -> dict[str, Any]:
    """The JSON object of a protobuf request body for ``rtype``.

    Raises a 400 :class:`StatusError` for malformed bytes or a kind/apiVersion other than ``rtype``'s, and
    a 415 for a kind, encoding or field this server cannot decode (the client can send JSON instead).
    """
    if not body or body == MAGIC:
        raise bad_request("empty body")
    if not body.startswith(MAGIC):
        raise bad_request("provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")
    decoder = _Decoder(f'"{rtype.kind}" ({rtype.api_version})')
    envelope = decoder.collect(body[len(MAGIC):], "runtime.Unknown", "")
    type_meta = decoder.collect(envelope.get(1, b""), "runtime.TypeMeta", "typeMeta")
    # An empty apiVersion or kind takes the endpoint's, as apimachinery's protobuf serializer defaults them.
    api_version = decoder.value(STRING, type_meta[1], "typeMeta.apiVersion") if 1 in type_meta else ""
    kind = decoder.value(STRING, type_meta[2], "typeMeta.kind") if 2 in type_meta else ""
    api_version, kind = api_version or rtype.api_version, kind or rtype.kind
    if api_version != rtype.api_version:
        raise bad_request(f"the API version in the data ({api_version}) does not match the expected API version "
                          f"({rtype.api_version})")
    if kind != rtype.kind:
        raise bad_request(f'the kind in the data ("{kind}") does not match the expected kind ("{rtype.kind}")')
    encoding = decoder.value(STRING, envelope[3], "contentEncoding") if 3 in envelope else ""
    content_type = decoder.value(STRING, envelope[4], "contentType") if 4 in envelope else ""
    if encoding or content_type not in ("", MEDIA_TYPE):
        # Nothing sends these; refusing beats decoding a compressed or JSON payload as protobuf.
        what = f"content encoding {encoding!r}" if encoding else f"content type {content_type!r}"
        raise _unsupported(f"the protobuf body of kind {decoder.label} wraps its object with {what}, "
                           f"which this server does not decode; send JSON or YAML (kubectl create -f)")
    root = KINDS.get((api_version, kind))
    if root is None:
        raise _unsupported(f"the protobuf body of kind {decoder.label} is not supported by this server; "
                           f"send JSON or YAML (kubectl create -f)")
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    obj.update(decoder.message(envelope.get(2, b""), root, ""))
    return obj


def _unsupported(message: str) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", message)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Decoder:
    def __init__(self, label: str) -> None:
        self.label = label  # '"Deployment" (apps/v1)', for error messages

    def message(self, data: bytes, key: str, path: str) -> dict[str, Any]:
        return self.emit(key, self.collect(data, key, path), path)

    # --- wire -> raw values ----------------------------------------------------------------------

    def collect(self, data: bytes, key: str, path: str) -> dict[int, Any]:
        """The fields present in ``data`` by number.

        Singular fields keep their raw wire value (the last one wins, as in protobuf) except messages,
        whose occurrences are concatenated: protobuf merges repeated occurrences of a message field, and
        parsing the concatenated encodings is exactly that merge. Lists and maps are decoded right away.
        """
        table = MESSAGES[key]
        seen: dict[int, Any] = {}
        try:
            for number, wire_type, value in wire.fields(data):
                field = table.get(number)
                if field is None:
                    raise self._unknown(proto_name(key), number, path)
                here = _join(path, field.json)
                kind = field.kind
                if wire_type == wire.LEN and field.opts & LIST and field.wire_type != wire.LEN:
                    # A packed repeated scalar; decoders must accept both forms whatever the .proto says.
                    assert isinstance(kind, Kind) and isinstance(value, bytes)
                    seen.setdefault(number, []).extend(
                        self.value(kind, item, here) for item in wire.packed(value, kind.wire_type))
                    continue
                if wire_type != field.wire_type:
                    raise self._malformed(
                        f"field {number} ({field.json or kind}) of {proto_name(key)} has wire type "
                        f"{wire.WIRE_NAMES[wire_type]}, expected {wire.WIRE_NAMES[field.wire_type]}", path)
                if isinstance(kind, MapOf):
                    assert isinstance(value, bytes)
                    entries = seen.setdefault(number, {})
                    entry_key, entry_value = self._entry(key, field, value, here)
                    entries[entry_key] = entry_value
                elif field.opts & LIST:
                    items = seen.setdefault(number, [])
                    items.append(self.value(kind, value, f"{here}[{len(items)}]"))
                elif isinstance(kind, str) or kind in _SPECIAL_TABLES:
                    seen[number] = seen.get(number, b"") + value
                else:
                    seen[number] = value
        except wire.WireError as exc:
            raise self._malformed(str(exc), path) from exc
        return seen

    def _entry(self, owner: str, field: Field, data: bytes, path: str) -> tuple[str, Any]:
        """One map entry: key as field 1, value as field 2, either may be absent (zero)."""
        assert isinstance(field.kind, MapOf)
        kinds = {1: field.kind.key, 2: field.kind.value}
        raw: dict[int, int | bytes] = {}
        for number, wire_type, value in wire.fields(data):
            if number not in kinds:
                entry = f"{proto_name(owner)}.{field.json[:1].upper()}{field.json[1:]}Entry"
                raise self._unknown(entry, number, path)
            kind = kinds[number]
            expected = kind.wire_type if isinstance(kind, Kind) else wire.LEN
            if wire_type != expected:
                raise self._malformed(f"map entry field {number} of {field.json} has wire type "
                                      f"{wire.WIRE_NAMES[wire_type]}, expected {wire.WIRE_NAMES[expected]}", path)
            raw[number] = value
        entry_key = self.value(field.kind.key, raw[1], path) if 1 in raw else ""
        here = f"{path}[{entry_key}]"
        entry_value = self.value(field.kind.value, raw[2], here) if 2 in raw else self.zero(field.kind.value, here)
        return entry_key, entry_value

    # --- raw values -> JSON ----------------------------------------------------------------------

    def emit(self, key: str, seen: dict[int, Any], path: str) -> dict[str, Any]:
        """The JSON members of a message, by ``encoding/json``'s rules for its Go struct."""
        out: dict[str, Any] = {}
        for number, field in MESSAGES[key].items():
            kind, opts, name = field.kind, field.opts, field.json
            here = _join(path, name)
            present = number in seen
            if opts & INLINE:
                assert isinstance(kind, str)
                out.update(self.message(seen.get(number, b""), kind, path))
            elif opts & LIST or isinstance(kind, MapOf) or kind is BYTES:
                # Go slices and maps: nil when absent, which omitempty drops and plain fields print as null.
                value = seen.get(number)
                if isinstance(value, dict):
                    value = dict(sorted(value.items()))  # encoding/json sorts map keys
                elif isinstance(value, bytes):  # a singular []byte, still raw
                    value = self.value(BYTES, value, here)
                if present and (value or opts & KEEP):
                    out[name] = value
                elif opts & KEEP:
                    out[name] = None
            elif opts & PTR:
                if present:
                    out[name] = self.value(kind, seen[number], here)
                elif opts & KEEP:
                    out[name] = None
            elif isinstance(kind, Kind) and kind not in _SPECIAL_TABLES:
                value = self.value(kind, seen[number], here) if present else _SCALAR_ZERO[kind]
                if value != _SCALAR_ZERO[kind] or opts & KEEP:
                    out[name] = value
            else:
                # A struct value: omitempty never drops it, only omitzero does.
                value = self.value(kind, seen[number], here) if present else self.zero(kind, here)
                if not (opts & OMITZERO and value == self.zero(kind, here)):
                    out[name] = value
        return out

    def value(self, kind: Kind | str, raw: int | bytes, path: str) -> Any:
        """The JSON form of one wire value of ``kind``."""
        if isinstance(kind, str):
            assert isinstance(raw, bytes)
            return self.message(raw, kind, path)
        if kind in _SPECIAL_TABLES:
            assert isinstance(raw, bytes)
            return self._special(kind, self.collect(raw, _SPECIAL_TABLES[kind], path), path)
        if kind is Kind.STRING or kind is Kind.BYTES:
            assert isinstance(raw, bytes)
            # Go's encoding/json turns invalid UTF-8 into U+FFFD, which "replace" does too.
            return raw.decode("utf-8", "replace") if kind is Kind.STRING else base64.b64encode(raw).decode("ascii")
        assert isinstance(raw, int)
        if kind is Kind.BOOL:
            return raw != 0
        if kind is Kind.INT32:
            return wire.as_int32(raw)
        if kind is Kind.INT64:
            return wire.as_int64(raw)
        return wire.as_double(raw)

    def zero(self, kind: Kind | str, path: str) -> Any:
        """The JSON form of a Go zero value of ``kind`` (an absent value field)."""
        if isinstance(kind, str):
            return self.emit(kind, {}, path)
        if kind in _SPECIAL_TABLES:
            return self._special(kind, {}, path)
        if kind is Kind.BYTES:
            return None
        return _SCALAR_ZERO[kind]

    def _special(self, kind: Kind, fields: dict[int, Any], path: str) -> Any:
        if kind is TIME:
            # metav1.Time decodes an empty message as the zero time, which marshals as null; nanoseconds
            # are dropped, as Time's own protobuf decoding and its RFC 3339 JSON both do.
            if not fields:
                return None
            seconds = wire.as_int64(fields.get(1, 0))
            try:
                moment = _EPOCH + timedelta(seconds=seconds)
            except OverflowError:
                raise self._malformed(f"timestamp {seconds} is out of range", path) from None
            return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}Z"
        if kind is QUANTITY:
            if 1 not in fields:
                return "0"  # the zero Quantity
            text = self.value(STRING, fields[1], path)
            if not _QUANTITY.match(text):
                raise self._malformed(f"quantity {text!r} must match the regular expression {_QUANTITY.pattern!r}",
                                      path)
            return text
        if kind is INT_OR_STRING:
            int_or_string = wire.as_int64(fields.get(1, 0))
            if int_or_string == 0:
                return wire.as_int32(fields.get(2, 0))
            if int_or_string == 1:
                return self.value(STRING, fields.get(3, b""), path)
            raise self._malformed(f"IntOrString type {int_or_string} is neither 0 (int) nor 1 (string)", path)
        # FieldsV1 carries its JSON verbatim.
        raw = fields.get(1, b"")
        try:
            return orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError as exc:
            raise self._malformed(f"fieldsV1 is not JSON: {exc}", path) from None

    # --- errors ----------------------------------------------------------------------------------

    def _malformed(self, why: str, path: str) -> StatusError:
        where = f" at {path}" if path else ""
        return bad_request(f"the protobuf body of kind {self.label} is malformed{where}: {why}")

    def _unknown(self, message: str, number: int, path: str) -> StatusError:
        where = f" (at {path})" if path else ""
        return _unsupported(f"the protobuf body of kind {self.label} has field {number} in message {message}{where}, "
                            f"which this server does not decode; send JSON or YAML (kubectl create -f)")
