"""OpenAPI value validation of custom resources, with kube-openapi's semantics and wording.

The apiserver validates a custom resource with kube-openapi's ``validate.SchemaValidator`` and then
turns each result error into a ``field.Error`` (``kubeOpenAPIResultToFieldErrors``). Clients see
both layers in messages such as::

    spec.replicas: Invalid value: 1000: spec.replicas in body should be less than or equal to 100

so this module follows kube-openapi closely, including its quirks: every validator that applies to
the value's Go kind runs (a wrong type does not stop the others), ``anyOf``/``oneOf`` report the
errors of the alternative with the most successful checks (``MatchCount``), composite errors and
range checks are plain errors reported at the nil path ``<nil>``, identical messages are reported
once, and numbers are compared natively as int64 or float64 the way Go does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from apimachinery import gofmt
from apimachinery.errors import Cause
from apiserver.crdschema import formats, regex
from apiserver.crdschema.node import Node

# Go kinds of decoded JSON values.
_NULL, _BOOL, _INT, _FLOAT, _STRING, _LIST, _MAP = range(7)

# kube-openapi error codes that kubeOpenAPIResultToFieldErrors distinguishes.
_TYPE = "type"
_REQUIRED = "required"
_ENUM = "enum"
_TOO_LONG = "tooLong"
_MAX_ITEMS = "maxItems"
_TOO_MANY_PROPS = "tooManyProperties"
_OTHER = "other"  # every other *errors.Validation: rendered as field.Invalid with the message
_PLAIN = "plain"  # not an *errors.Validation (composite and range errors): field.Invalid at the nil path

_NO_VALUE = object()
_FLOAT32_OVERFLOW = (2 - 2**-24) * 2.0**127  # halfway between MaxFloat32 and 2**128


def kind_of(value: Any) -> int:
    if value is None:
        return _NULL
    if isinstance(value, bool):
        return _BOOL
    if isinstance(value, int):
        # JSON integers beyond int64 decode to float64 in Go.
        return _INT if gofmt.INT64_MIN <= value <= gofmt.INT64_MAX else _FLOAT
    if isinstance(value, float):
        return _FLOAT
    if isinstance(value, str):
        return _STRING
    if isinstance(value, (list, tuple)):
        return _LIST
    if isinstance(value, Mapping):
        return _MAP
    return _STRING


_TYPE_INFO = {_BOOL: ("boolean", ""), _INT: ("integer", "int64"), _FLOAT: ("number", "float64"),
              _STRING: ("string", ""), _LIST: ("array", ""), _MAP: ("object", "")}


class _Err:
    __slots__ = ("code", "message", "name", "valid", "value", "values")

    def __init__(self, code: str, message: str, name: str = "", value: Any = _NO_VALUE, valid: int = -1,
                 values: list[Any] | None = None) -> None:
        self.code = code
        self.message = message
        self.name = name
        self.value = value
        self.valid = valid
        self.values = values


class _Result:
    __slots__ = ("errors", "match_count", "seen")

    def __init__(self) -> None:
        self.errors: list[_Err] = []
        self.seen: set[str] = set()
        self.match_count = 0

    def add(self, err: _Err | None) -> None:
        # kube-openapi drops an error whose text was already reported.
        if err is not None and err.message not in self.seen:
            self.seen.add(err.message)
            self.errors.append(err)

    def merge(self, other: _Result | None) -> None:
        if other is not None:
            for err in other.errors:
                self.add(err)
            self.match_count += other.match_count

    @property
    def valid(self) -> bool:
        return not self.errors


def _single(err: _Err) -> _Result:
    res = _Result()
    res.add(err)
    return res


# --- Go number helpers ---------------------------------------------------------------------------


def _go_int64(f: float) -> int:
    """int64(f) in Go on amd64: truncation, with out-of-range values becoming MinInt64."""
    if not math.isfinite(f) or not gofmt.INT64_MIN <= f < 2.0**63:
        return gofmt.INT64_MIN
    return int(f)


def _is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger, including its relative-epsilon tolerance."""
    if math.isnan(f) or math.isinf(f) or f < -(2.0**53) or f > 2.0**53:
        return False
    if f.is_integer():
        return True
    if f < 0:
        return False  # uint64(f) of a negative float is far away on amd64
    g = float(int(f))
    diff = abs(f - g)
    if g == 0:
        return diff < 1e-9 * 5e-324
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _number_text(value: int | float) -> str:
    """swag's FormatInt64/FormatFloat64, the text range checks re-parse."""
    if isinstance(value, int) and gofmt.INT64_MIN <= value <= gofmt.INT64_MAX:
        return str(value)
    return gofmt.format_float_f(float(value))


def _range_error(value: int | float, type_name: str, fmt: str, prefix: str, path: str) -> _Err | None:
    """kube-openapi IsValueValidAgainstRange: whether the value fits the type's format."""
    text = _number_text(value)
    ok = True
    if type_name == "integer":
        lo, hi = ((-(2**31), 2**31 - 1) if fmt == "int32" else (gofmt.INT64_MIN, gofmt.INT64_MAX))
        digits = text[1:] if text[:1] in "+-" else text
        ok = digits.isdigit() and digits.isascii() and lo <= int(text) <= hi
    elif fmt == "float":
        # ParseFloat(text, 32) fails when the value rounds to infinity as a float32.
        ok = abs(float(text)) < _FLOAT32_OVERFLOW
    if ok:
        return None
    if fmt:
        return _Err(_PLAIN, f"{prefix} value must be of type {type_name} with format {fmt} in {path}")
    return _Err(_PLAIN, f"{prefix} value must be of type {type_name} (default format) in {path}")


def _go_list(values: list[Any]) -> str:
    """``%v`` of a []interface{} (only used to tell enum errors apart)."""
    return "[" + " ".join(v if isinstance(v, str) else gofmt.json_marshal(v) for v in values) + "]"


def go_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual of decoded JSON: int64, float64 and bool are distinct types."""
    ka, kb = kind_of(a), kind_of(b)
    if ka != kb:
        return False
    if ka == _LIST:
        return len(a) == len(b) and all(go_equal(x, y) for x, y in zip(a, b, strict=True))
    if ka == _MAP:
        return a.keys() == b.keys() and all(go_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _rune_string(i: int) -> str:
    if 0 <= i <= 0x10FFFF and not 0xD800 <= i <= 0xDFFF:
        return chr(i)
    return "\ufffd"


def _enum_matches(data: Any, candidate: Any) -> bool:
    """kube-openapi's enum check: convert data to the candidate's Go type, then DeepEqual."""
    dk = kind_of(data)
    ck = kind_of(candidate)
    if ck == _NULL or dk == _NULL:
        return False
    if ck == _BOOL:
        return dk == _BOOL and data == candidate
    if ck == _INT:
        if dk == _INT:
            return bool(data == candidate)
        return dk == _FLOAT and _go_int64(float(data)) == candidate
    if ck == _FLOAT:
        return dk in (_INT, _FLOAT) and float(data) == candidate
    if ck == _STRING:
        if dk == _STRING:
            return bool(data == candidate)
        # Go converts an integer to the string of that rune.
        return dk == _INT and _rune_string(data) == candidate
    return dk == ck and go_equal(data, candidate)


# --- the validators ------------------------------------------------------------------------------


def _type_error(path: str, type_name: str, value: str) -> _Err:
    return _Err(_TYPE, f"{path} in body must be of type {type_name}: {gofmt.go_quote(value)}", path, value)


def _check_type(node: Node, data: Any, kind: int, path: str) -> _Result:
    res = _Result()
    res.match_count = 1
    types = node.types
    if kind == _NULL:
        if types and "null" not in types and not node.nullable:
            return _single(_type_error(path, ",".join(types), "null"))
        return res
    sch_type, fmt = _TYPE_INFO[kind]
    is_float_int = kind == _FLOAT and "integer" in types and _is_json_integer(float(data))
    is_int_float = kind == _INT and "number" in types
    if kind not in (_STRING, _LIST) and node.format and not (
            sch_type in types or fmt == node.format or is_float_int or is_int_float):
        return _single(_type_error(path, node.format, fmt))
    if "number" not in types and "integer" not in types and node.format and kind in (_STRING, _LIST):
        return res
    if not (sch_type in types or is_float_int or is_int_float):
        return _single(_type_error(path, ",".join(types), sch_type))
    return res


def _check_props(node: Node, data: Any, path: str) -> _Result:
    main = _Result()
    if node.any_of:
        best: _Result | None = None
        first_success: _Result | None = None
        for sub in node.any_of:
            result = validate_node(sub, data, path)
            if result.valid:
                best = None
                first_success = result
                break
            if best is None or result.match_count > best.match_count:
                best = result
        if first_success is None:
            main.add(_Err(_PLAIN, f"{gofmt.go_quote(path)} must validate at least one schema (anyOf)"))
        main.merge(best if best is not None else first_success)
    if node.one_of:
        best = None
        first_success = None
        validated = 0
        for sub in node.one_of:
            result = validate_node(sub, data, path)
            if result.valid:
                validated += 1
                best = None
                if first_success is None:
                    first_success = result
                continue
            if validated == 0 and (best is None or result.match_count > best.match_count):
                best = result
        if validated != 1:
            extra = "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
            main.add(_Err(_PLAIN, f"{gofmt.go_quote(path)} must validate one and only one schema (oneOf). {extra}"))
            main.merge(best)
        else:
            main.merge(first_success)
    if node.all_of:
        validated = 0
        for sub in node.all_of:
            result = validate_node(sub, data, path)
            if result.valid:
                validated += 1
            main.merge(result)
        if validated != len(node.all_of):
            extra = ". None validated" if validated == 0 else ""
            main.add(_Err(_PLAIN, f"{gofmt.go_quote(path)} must validate all the schemas (allOf){extra}"))
    if node.not_ is not None and validate_node(node.not_, data, path).valid:
        main.add(_Err(_PLAIN, f"{gofmt.go_quote(path)} must not validate the schema (not)"))
    main.match_count += 1
    return main


def _check_string(node: Node, data: str, path: str) -> _Err | None:
    # kube-openapi reports only the first failing string check.
    if node.max_length is not None and len(data) > node.max_length:
        return _Err(_TOO_LONG, f"{path} in body should be at most {node.max_length} chars long", path, data,
                    node.max_length)
    if node.min_length is not None and len(data) < node.min_length:
        return _Err(_OTHER, f"{path} in body should be at least {node.min_length} chars long", path, data,
                    node.min_length)
    if node.pattern:
        try:
            matched = regex.compile(node.pattern).search(data)
        except regex.RegexError as exc:
            return _Err(_OTHER, f"{path} in body should match '{node.pattern}, but pattern is invalid: {exc}'",
                        path, data)
        if not matched:
            return _Err(_OTHER, f"{path} in body should match '{node.pattern}'", path, data)
    return None


def _check_number(node: Node, data: int | float, path: str) -> _Result:
    res = _Result()
    type_name = fmt = ""
    if len(node.types) == 1:
        if node.types[0] == "integer":
            type_name = "integer"
            fmt = node.format if node.format in ("int32", "int64") else ""
        elif node.types[0] == "number":
            type_name = "number"
            fmt = node.format if node.format in ("float", "double") else ""
    if isinstance(data, int) and kind_of(data) == _FLOAT:
        data = float(data)
    native_int = isinstance(data, int)
    as_float = float(data)
    res.add(_range_error(data, type_name, fmt, "Checked", path))

    multiple = _Result()
    if node.multiple_of is not None:
        factor = node.multiple_of
        bad = _range_error(factor, type_name, fmt, "MultipleOf", path)
        multiple.add(bad)
        if bad is None and native_int:
            ifactor = _go_int64(factor)
            if ifactor <= 0:
                multiple.add(_Err(_OTHER, f"factor MultipleOf declared for {path} must be positive: {ifactor}",
                                  path, ifactor))
            elif data % ifactor:
                multiple.add(_Err(_OTHER, f"{path} in body should be a multiple of {ifactor}", path, data))
        else:
            multiple.add(_float_multiple(path, as_float, factor))

    minimum = _Result()
    if node.minimum is not None:
        bound = node.minimum
        bad = _range_error(bound, type_name, fmt, "Minimum boundary", path)
        minimum.add(bad)
        if bad is None and native_int:
            ib = _go_int64(bound)
            if data < ib or (node.exclusive_min and data <= ib):
                minimum.add(_limit_error(path, ib, node.exclusive_min, False, data))
        elif as_float < bound or (node.exclusive_min and as_float <= bound):
            minimum.add(_limit_error(path, bound, node.exclusive_min, False, as_float if bad else data))

    maximum = _Result()
    if node.maximum is not None:
        bound = node.maximum
        bad = _range_error(bound, type_name, fmt, "Maximum boundary", path)
        maximum.add(bad)
        if bad is None and native_int:
            ib = _go_int64(bound)
            if data > ib or (node.exclusive_max and data >= ib):
                maximum.add(_limit_error(path, ib, node.exclusive_max, True, data))
        elif as_float > bound or (node.exclusive_max and as_float >= bound):
            maximum.add(_limit_error(path, bound, node.exclusive_max, True, as_float if bad else data))

    res.merge(multiple)
    res.merge(minimum)
    res.merge(maximum)
    res.match_count += 1
    return res


def _float_multiple(path: str, data: float, factor: float) -> _Err | None:
    if factor <= 0:
        return _Err(_OTHER, f"factor MultipleOf declared for {path} must be positive: {gofmt.go_float(factor)}",
                    path, factor)
    mult = (1 / factor) * data if factor < 1 else data / factor
    if _is_json_integer(mult):
        return None
    return _Err(_OTHER, f"{path} in body should be a multiple of {gofmt.go_float(factor)}", path, data)


def _limit_error(path: str, bound: int | float, exclusive: bool, upper: bool, value: int | float) -> _Err:
    shown = gofmt.go_number(bound)
    if upper:
        text = f"less than {shown}" if exclusive else f"less than or equal to {shown}"
    else:
        text = f"greater than {shown}" if exclusive else f"greater than or equal to {shown}"
    return _Err(_OTHER, f"{path} in body should be {text}", path, value)


def _check_slice(node: Node, data: list[Any], path: str) -> _Result:
    res = _Result()
    if node.items is not None:
        for i, item in enumerate(data):
            res.merge(validate_node(node.items, item, f"{path}[{i}]"))
    size = len(data)
    if node.min_items is not None and size < node.min_items:
        res.add(_Err(_OTHER, f"{path} in body should have at least {node.min_items} items", path, size,
                     node.min_items))
    if node.max_items is not None and size > node.max_items:
        res.add(_Err(_MAX_ITEMS, f"{path} in body should have at most {node.max_items} items", path, size,
                     node.max_items))
    if node.unique:
        for i, item in enumerate(data):
            if any(go_equal(item, other) for other in data[:i]):
                res.add(_Err(_OTHER, f"{path} in body shouldn't contain duplicates", path))
                break
    res.match_count += 1
    return res


def _check_enum(node: Node, data: Any, path: str) -> _Err | None:
    if node.enum is None:
        return None
    if any(_enum_matches(data, candidate) for candidate in node.enum):
        return None
    return _Err(_ENUM, f"{path} in body should be one of {_go_list(node.enum)}", path, data, values=node.enum)


def _check_object(node: Node, data: Mapping[str, Any], path: str) -> _Result:
    res = _Result()
    size = len(data)
    if node.min_props is not None and size < node.min_props:
        res.add(_Err(_OTHER, f"{path} in body should have at least {node.min_props} properties", path, size,
                     node.min_props))
    if node.max_props is not None and size > node.max_props:
        res.add(_Err(_TOO_MANY_PROPS, f"{path} in body should have at most {node.max_props} properties", path,
                     size, node.max_props))
    props = node.props
    if node.has_additional and not node.additional_allows:
        for k in data:
            if k not in props:
                res.add(_Err(_OTHER, f"{path}.{k} in body is a forbidden property", path, k))
    elif node.additional is not None:
        for k, v in data.items():
            if k not in props:
                res.merge(validate_node(node.additional, v, f"{path}.{k}"))
    for name, sub in props.items():
        if name in data:
            res.merge(validate_node(sub, data[name], f"{path}.{name}" if path else name))
    for name in node.required:
        if name not in data:
            res.add(_Err(_REQUIRED, f"{path}.{name} in body is required", f"{path}.{name}"))
    return res


def validate_node(node: Node, data: Any, path: str) -> _Result:
    """kube-openapi's SchemaValidator.Validate of ``data`` at kube-openapi path ``path``."""
    res = _Result()
    kind = kind_of(data)
    if kind == _NULL:
        res.merge(_check_type(node, data, kind, path))
        res.add(_check_enum(node, data, path))
        return res
    if node.types or node.format:
        res.merge(_check_type(node, data, kind, path))
        res.match_count += 1
    res.merge(_check_props(node, data, path))
    res.match_count += 1
    if kind == _STRING:
        res.add(_check_string(node, data, path))
        res.match_count += 1
        if node.format and formats.supported_string_format(node.format):
            if not formats.validates(node.format, data):
                res.add(_type_error(path, node.format, data))
            res.match_count += 1
    elif kind in (_INT, _FLOAT):
        res.merge(_check_number(node, data, path))
        res.match_count += 1
    elif kind == _LIST:
        res.merge(_check_slice(node, data, path))
        res.match_count += 1
    res.add(_check_enum(node, data, path))
    res.match_count += 1
    if kind == _MAP:
        res.merge(_check_object(node, data, path))
        res.match_count += 1
    res.match_count += 1
    return res


def _enum_text(value: Any) -> str:
    return value if isinstance(value, str) else gofmt.json_marshal(value)


def to_causes(result: _Result, prefix: str | None) -> list[Cause]:
    """kubeOpenAPIResultToFieldErrors: ``prefix`` is the field path validated (None for the object)."""
    causes: list[Cause] = []
    for err in result.errors:
        if err.code == _PLAIN:
            causes.append(gofmt.invalid(prefix or gofmt.NIL_PATH, "", err.message))
            continue
        path = prefix
        if err.name and err.name != ".":
            name = err.name.removeprefix(".")
            path = f"{prefix}.{name}" if prefix else name
        path = path or gofmt.NIL_PATH
        value = err.value
        if err.code == _REQUIRED:
            causes.append(gofmt.required(path))
        elif err.code == _ENUM:
            causes.append(gofmt.not_supported(path, value, [_enum_text(v) for v in err.values or []]))
        elif err.code == _TOO_LONG:
            causes.append(gofmt.too_long(path, err.valid))
        elif err.code in (_MAX_ITEMS, _TOO_MANY_PROPS):
            causes.append(gofmt.too_many(path, value, err.valid))
        elif err.code == _TYPE:
            causes.append(gofmt.type_invalid(path, "" if value is _NO_VALUE or value is None else value,
                                             err.message))
        else:
            causes.append(gofmt.invalid(path, "" if value is _NO_VALUE or value is None else value, err.message))
    return causes


def validate_value(node: Node, data: Any, prefix: str | None = None) -> list[Cause]:
    """Validate ``data`` against ``node``; ``prefix`` is the field path ``data`` sits at (if any)."""
    return to_causes(validate_node(node, data, ""), prefix)
