"""Go's renderings of values, and apimachinery field errors built from them.

Messages of custom-resource and CRD validation embed values exactly as Go prints them:
``field.Error.ErrorBody`` uses ``%v`` for numbers and booleans, ``%q`` for strings and
``encoding/json`` for everything else, and kube-openapi formats its limits with ``%v``. Python's
``repr``/``json.dumps`` differ in many small ways (``1e+06`` vs ``1000000.0``, HTML escaping,
``\\u00a0`` vs a literal no-break space), so this module reimplements those renderings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.fieldpath import go_json_string

# --- numbers -------------------------------------------------------------------------------------

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def _digits(f: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of ``abs(f)`` and the decimal point position.

    Python's ``repr`` and Go's ``strconv`` both produce the shortest digits that round-trip,
    so the digit string is the same; only the layout differs.
    """
    text = repr(abs(f))
    mantissa, _, exp_text = text.partition("e")
    exp = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + exp
    if not digits:
        return "0", 1
    # Leading zeros removed from the digit string move the decimal point left.
    point -= len(whole + frac) - len((whole + frac).lstrip("0"))
    return digits.rstrip("0") or "0", point


def _fmt_f(f: float) -> str:
    digits, point = _digits(f)
    sign = "-" if math.copysign(1.0, f) < 0 and f != 0 else ""
    if f == 0:
        return sign + "0"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _fmt_e(f: float, min_exp_digits: int = 2) -> str:
    digits, point = _digits(f)
    sign = "-" if f < 0 else ""
    exp = point - 1 if f != 0 else 0
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exp_sign = "-" if exp < 0 else "+"
    return f"{sign}{mantissa}e{exp_sign}{abs(exp):0{min_exp_digits}d}"


def go_float(f: float) -> str:
    """``fmt.Sprintf("%v", f)`` for a float64: shortest digits, exponent form outside [1e-4, 1e6)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    _, point = _digits(f)
    exp = point - 1
    # strconv's %g with the shortest precision decides with precision 6: 1e+06, 100000.
    if exp < -4 or exp >= 6:
        return _fmt_e(f)
    return _fmt_f(f)


def format_float_f(f: float) -> str:
    """``strconv.FormatFloat(f, 'f', -1, 64)`` (swag's FormatFloat64)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    return _fmt_f(f)


def json_float(f: float) -> str:
    """A float64 as ``encoding/json`` writes it."""
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        text = _fmt_e(f)
        # encoding/json trims the exponent's leading zero: 1e-07 -> 1e-7.
        mantissa, _, exp = text.partition("e")
        sign, digits = exp[0], exp[1:].lstrip("0") or "0"
        return f"{mantissa}e{sign}{digits}"
    return _fmt_f(f)


def go_number(value: int | float) -> str:
    """``%v`` of a JSON number as the apiserver decoded it (int64, or float64 when not integral)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if INT64_MIN <= value <= INT64_MAX:
            return str(value)
        return go_float(float(value))
    return go_float(float(value))


# --- strings -------------------------------------------------------------------------------------

_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """``strconv.Quote``: printable runes kept, others escaped the way Go escapes them."""
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == " " or ch.isprintable():
            out.append(ch)
        elif ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        else:
            code = ord(ch)
            if code < 0x20 or code == 0x7F:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def json_marshal(value: Any) -> str:
    """``encoding/json.Marshal`` of a decoded JSON value: sorted keys, compact, HTML-safe."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, str):
        return go_json_string(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{go_json_string(str(k))}:{json_marshal(value[k])}"
                              for k in sorted(value, key=lambda k: str(k).encode())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(json_marshal(v) for v in value) + "]"
    return go_json_string(str(value))


class GoJSON:
    """A value ``field.Error`` must render as JSON although Python would see a string or number.

    Go passes typed values such as ``*string`` or ``[]string`` as bad values; those go through
    ``json.Marshal`` (``"atomic"`` with quotes, ``null``) instead of ``%q``/``%v``.
    """

    __slots__ = ("text",)

    def __init__(self, value: Any = None, *, raw: str | None = None) -> None:
        self.text = raw if raw is not None else json_marshal(value)


def go_value(value: Any) -> str:
    """How ``field.Error.ErrorBody`` prints a bad value."""
    if isinstance(value, GoJSON):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return go_number(value)
    if isinstance(value, str):
        return go_quote(value)
    return json_marshal(value)


# --- field paths ---------------------------------------------------------------------------------

NIL_PATH = "<nil>"  # what a nil *field.Path prints, e.g. for kube-openapi errors without a name


def child(path: str, *names: str) -> str:
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# --- field errors --------------------------------------------------------------------------------


def _body(prefix: str, detail: str) -> str:
    return f"{prefix}: {detail}" if detail else prefix


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", _body("Required value", detail), path)


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", _body(f"Invalid value: {go_value(value)}", detail), path)


def type_invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueTypeInvalid", _body(f"Invalid value: {go_value(value)}", detail), path)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    quoted = ", ".join(go_quote(s) for s in supported)
    return Cause("FieldValueNotSupported",
                 _body(f"Unsupported value: {go_value(value)}", f"supported values: {quoted}" if quoted else ""),
                 path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_value(value)}", path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", _body("Forbidden", detail), path)


def too_long(path: str, max_bytes: int) -> Cause:
    if max_bytes < 0:
        return Cause("FieldValueTooLong", "Too long: value is too long", path)
    unit = "byte" if max_bytes == 1 else "bytes"
    return Cause("FieldValueTooLong", f"Too long: may not be more than {max_bytes} {unit}", path)


def too_many(path: str, actual: int, max_items: int) -> Cause:
    detail = f"must have at most {max_items} {'item' if max_items == 1 else 'items'}" if max_items >= 0 \
        else "has too many items"
    head = f"Too many: {actual}" if actual >= 0 else "Too many"
    return Cause("FieldValueTooMany", f"{head}: {detail}", path)


def render(cause: Cause) -> str:
    """``field.Error.Error()``: the path and the body, as aggregated messages show them."""
    return f"{cause.field or NIL_PATH}: {cause.message}"
