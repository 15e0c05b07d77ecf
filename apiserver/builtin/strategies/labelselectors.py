"""``metav1.LabelSelector``: validation, and matching against a set of labels."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.names import forbidden, invalid, is_label_value, is_qualified_name, required, validate_labels
from apimachinery.nested import dicts


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
    """Whether a ``metav1.LabelSelector`` selects ``labels``; an empty selector selects everything."""
    if not isinstance(selector, dict):
        return False
    labels = labels if isinstance(labels, dict) else {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in dicts(selector.get("matchExpressions")):
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values")
        if not isinstance(key, str):
            return False
        values = values if isinstance(values, list) else []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def selector_is_empty(selector: Any) -> bool:
    if not isinstance(selector, dict):
        return True
    return not (selector.get("matchLabels") or selector.get("matchExpressions"))
