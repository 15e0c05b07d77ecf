"""``metav1.LabelSelector`` in the built-in kinds' strategies: validation with field paths, and matching
through :mod:`apimachinery.selectors` (the one matcher)."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause, StatusError
from apimachinery.names import forbidden, invalid, is_label_value, is_qualified_name, required, validate_labels
from apimachinery.nested import dicts
from apimachinery.selectors import label_selector_from_object


def validate_label_selector(selector: Any, path: str) -> list[Cause]:
    if not isinstance(selector, dict):
        return []
    causes = validate_labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in enumerate(dicts(selector.get("matchExpressions"))):
        at = f"{path}.matchExpressions[{i}]"
        operator, values = expr.get("operator"), expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(required(f"{at}.values",
                                       "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(forbidden(f"{at}.values",
                                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            causes.append(invalid(f"{at}.operator", operator, "not a valid selector operator"))
        key = expr.get("key")
        key_errors = is_qualified_name(key if isinstance(key, str) else "")
        causes.extend(invalid(f"{at}.key", key, m) for m in key_errors)
        for j, value in enumerate(values if isinstance(values, list) else []):
            causes.extend(invalid(f"{at}.values[{j}]", value, m) for m in is_label_value(str(value)))
    return causes


def selector_matches(selector: Any, labels: Any) -> bool:
    """Whether a ``metav1.LabelSelector`` selects ``labels``, by apimachinery's one matcher; an empty
    selector selects everything.

    A selector that does not convert (not an object, an unknown operator, a bad key or value …) selects
    nothing: :func:`validate_label_selector` reports what is wrong with it, and the caller's own check
    (the template's labels, a Job's generated selector) then fails too rather than pass on half a selector.
    """
    if not isinstance(selector, dict):
        return False
    try:
        parsed = label_selector_from_object(selector)
    except StatusError:
        return False
    return parsed.matches(labels if isinstance(labels, dict) else None)


def selector_is_empty(selector: Any) -> bool:
    if not isinstance(selector, dict):
        return True
    return not (selector.get("matchLabels") or selector.get("matchExpressions"))
