"""Small helpers every built-in strategy uses: reading and defaulting plain-dict objects, the common
validation messages, the port protocols, and ``IntOrString`` counts and percentages.

Names with a leading underscore here (and in the other modules of this package) are shared between the
package's modules but are not part of what :mod:`apiserver.builtin.strategies` exports.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import invalid, is_valid_percent
from apimachinery.nested import dicts as _dicts  # noqa: F401  (re-exported to the strategies)
from apimachinery.nested import get as _get

Obj = dict[str, Any]

IMMUTABLE = "field is immutable"
NEGATIVE = "must be greater than or equal to 0"
_PROTOCOLS = ("SCTP", "TCP", "UDP")  # of container, service and network policy ports

# --- small dict helpers ---------------------------------------------------------------------------


def _child(obj: Obj, key: str) -> Obj:
    """``obj[key]`` as a dict, created (or replaced, if not a dict) on demand."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _spec(obj: Obj) -> Obj:
    """``obj["spec"]`` for reading: an empty dict when it is absent or not a mapping."""
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _meta(obj: Obj) -> Obj:
    return _child(obj, "metadata")


def _name(obj: Obj) -> str:
    name = _get(obj, "metadata", "name")
    return name if isinstance(name, str) else ""


def _seed(obj: Obj) -> str:
    """A stable per-object seed for allocations: the uid, which is set before prepare_for_create."""
    uid = _get(obj, "metadata", "uid")
    if isinstance(uid, str) and uid:
        return uid
    return f"{_get(obj, 'metadata', 'namespace')}/{_name(obj)}"


def _default(obj: Obj, key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def _nonnegative(obj: Any, path: str, *keys: str) -> list[Cause]:
    value = _get(obj, *keys)
    return [invalid(path, value, NEGATIVE)] if _is_int(value) and value < 0 else []


def _immutable(new: Any, old: Any, path: str) -> list[Cause]:
    return [] if _normalised(new) == _normalised(old) else [invalid(path, new, IMMUTABLE)]


def _normalised(value: Any) -> Any:
    """Semantic equality as apiequality sees it: empty maps and lists equal absent ones."""
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


# --- intstr ---------------------------------------------------------------------------------------


def _validate_int_or_percent(value: Any, path: str, *, at_most_100: bool = True) -> list[Cause]:
    """A non-negative count or percentage; ``at_most_100`` for shares of a whole (not surges)."""
    if isinstance(value, str):
        causes = [invalid(path, value, m) for m in is_valid_percent(value)]
        if at_most_100 and not causes and int(value[:-1]) > 100:
            causes.append(invalid(path, value, "must not be greater than 100%"))
        return causes
    if _is_int(value):
        return [invalid(path, value, NEGATIVE)] if value < 0 else []
    if value is None:
        return []
    return [invalid(path, value, "must be an integer or percentage (e.g '5%')")]


def _int_or_percent_is_zero(value: Any) -> bool:
    if isinstance(value, str) and value.endswith("%"):
        return value[:-1].isdigit() and int(value[:-1]) == 0
    return value == 0 or value is None
