"""Reading, defaulting and checking the fields of plain-dict objects, as every built-in strategy does: the
common validation messages, the port protocols, and ``IntOrString`` counts and percentages. Paths into
nested dicts are read with :mod:`apimachinery.nested`.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import invalid, is_valid_percent
from apimachinery.nested import get

Obj = dict[str, Any]

IMMUTABLE = "field is immutable"
NEGATIVE = "must be greater than or equal to 0"
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")  # of container, service and network policy ports

# --- small dict helpers ---------------------------------------------------------------------------


def child(obj: Obj, key: str) -> Obj:
    """``obj[key]`` as a dict, created (or replaced, if not a dict) on demand."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def spec_of(obj: Obj) -> Obj:
    """``obj["spec"]`` for reading: an empty dict when it is absent or not a mapping."""
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def metadata_of(obj: Obj) -> Obj:
    return child(obj, "metadata")


def name_of(obj: Obj) -> str:
    name = get(obj, "metadata", "name")
    return name if isinstance(name, str) else ""


def allocation_seed(obj: Obj) -> str:
    """A stable per-object seed for allocations: the uid, which is set before prepare_for_create."""
    uid = get(obj, "metadata", "uid")
    if isinstance(uid, str) and uid:
        return uid
    return f"{get(obj, 'metadata', 'namespace')}/{name_of(obj)}"


def set_default(obj: Obj, key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def nonnegative(obj: Any, path: str, *keys: str) -> list[Cause]:
    value = get(obj, *keys)
    return [invalid(path, value, NEGATIVE)] if is_int(value) and value < 0 else []


def immutable(new: Any, old: Any, path: str) -> list[Cause]:
    return [] if normalised(new) == normalised(old) else [invalid(path, new, IMMUTABLE)]


def normalised(value: Any) -> Any:
    """Semantic equality as apiequality sees it: empty maps and lists equal absent ones."""
    if isinstance(value, dict):
        return {k: normalised(v) for k, v in value.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


# --- intstr ---------------------------------------------------------------------------------------


def validate_int_or_percent(value: Any, path: str, *, at_most_100: bool = True) -> list[Cause]:
    """A non-negative count or percentage; ``at_most_100`` for shares of a whole (not surges)."""
    if isinstance(value, str):
        causes = [invalid(path, value, m) for m in is_valid_percent(value)]
        if at_most_100 and not causes and int(value[:-1]) > 100:
            causes.append(invalid(path, value, "must not be greater than 100%"))
        return causes
    if is_int(value):
        return [invalid(path, value, NEGATIVE)] if value < 0 else []
    if value is None:
        return []
    return [invalid(path, value, "must be an integer or percentage (e.g '5%')")]


def int_or_percent_is_zero(value: Any) -> bool:
    if isinstance(value, str) and value.endswith("%"):
        return value[:-1].isdigit() and int(value[:-1]) == 0
    return value == 0 or value is None
