"""What every built-in kind's table is made of: defensive field accessors, shared cell formats, columns.

Cells take the stored object as a plain dict and never raise: objects may be partial (a failed write, a
status not yet written), so every field is read through the accessors here. ``default_columns`` and
``created_at_columns`` are the tables of kinds that have no printer of their own upstream.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC
from typing import Any

from apimachinery.durations import age, parse_time
from apiserver.definitions import load_definitions
from apiserver.resourcetypes import Column

Obj = dict[str, Any]
META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# --- defensive accessors --------------------------------------------------------------------------


def at(obj: Any, *path: str | int) -> Any:
    node = obj
    for key in path:
        if isinstance(key, int):
            if not isinstance(node, list) or not -len(node) <= key < len(node):
                return None
            node = node[key]
        else:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
    return node


def str_at(obj: Any, *path: str | int) -> str:
    value = at(obj, *path)
    return value if isinstance(value, str) else ""


def int_at(obj: Any, *path: str | int) -> int:
    value = at(obj, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def list_at(obj: Any, *path: str | int) -> list[Any]:
    value = at(obj, *path)
    return value if isinstance(value, list) else []


def dict_at(obj: Any, *path: str | int) -> dict[str, Any]:
    value = at(obj, *path)
    return value if isinstance(value, dict) else {}


def intstr(value: Any) -> str:
    """``intstr.IntOrString.String()``."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int | str) else ""


# --- time -----------------------------------------------------------------------------------------

def since(obj: Any, *path: str) -> str:
    return age(str_at(obj, *path) or None)


def age_cell(obj: Obj) -> str:
    return since(obj, "metadata", "creationTimestamp")


def created_at(obj: Obj) -> str:
    then = parse_time(str_at(obj, "metadata", "creationTimestamp"))
    return then.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if then else ""


# --- formatting helpers shared by several kinds ---------------------------------------------------


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` pairs, ``<none>`` when empty."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def selector_string(selector: Any) -> str:
    """``LabelSelectorAsSelector(sel).String()``: requirements sorted by key."""
    if not isinstance(selector, dict):
        return ""
    requirements: list[tuple[str, str]] = []
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, dict):
        requirements += [(str(k), f"{k}={v}") for k, v in match_labels.items()]
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            continue
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        rendered = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                    "Exists": key, "DoesNotExist": f"!{key}"}.get(str(op), "")
        requirements.append((key, rendered))
    return ",".join(r for _, r in sorted(requirements, key=lambda kv: kv[0]))


def format_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: like the selector string, but ``<none>`` when empty."""
    return selector_string(selector) or "<none>"


def containers(template_spec: Any) -> tuple[str, str]:
    containers = [c for c in list_at(template_spec, "containers") if isinstance(c, dict)]
    return (",".join(str_at(c, "name") for c in containers), ",".join(str_at(c, "image") for c in containers))


def container_names(*path: str) -> Callable[[Obj], str]:
    return lambda obj: containers(at(obj, *path))[0]


def container_images(*path: str) -> Callable[[Obj], str]:
    return lambda obj: containers(at(obj, *path))[1]


def has_condition(obj: Obj, condition_type: str) -> bool:
    for condition in list_at(obj, "status", "conditions"):
        if str_at(condition, "type") == condition_type:
            return str_at(condition, "status") == "True"
    return False


def bool_ptr(value: Any) -> str:
    """``printBoolPtr``."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def load_balancer(status: Any) -> str:
    ingress = list_at(status, "loadBalancer", "ingress")
    found = {str_at(i, "ip") or str_at(i, "hostname") for i in ingress}
    found.discard("")
    return ",".join(sorted(found))


ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def access_modes(modes: Any) -> str:
    present = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in ACCESS_MODES if mode in present)


# --- column construction --------------------------------------------------------------------------


@functools.cache
def field_doc(definition: str, prop: str) -> str:
    """An upstream field description, as the printers use ``SwaggerDoc()`` for column descriptions."""
    node = load_definitions().get(definition, {}).get("properties", {}).get(prop, {})
    return node.get("description", "") if isinstance(node, dict) else ""


def col(name: str, type_: str, cell: Callable[[Obj], Any], description: str = "", *, priority: int = 0,
         format_: str = "") -> Column:
    return Column(name=name, type=type_, cell=cell, description=description, format=format_,
                  priority=priority)


def name_col() -> Column:
    return col("Name", "string", lambda o: str_at(o, "metadata", "name"), field_doc(META, "name"),
                format_="name")


def age_col() -> Column:
    return col("Age", "string", age_cell, field_doc(META, "creationTimestamp"))


def default_columns() -> tuple[Column, ...]:
    """Name and Age, for kinds without columns of their own."""
    return (name_col(), age_col())


def created_at_columns() -> tuple[Column, ...]:
    """``rest.DefaultTableConvertor``: what upstream serves for kinds without a printer."""
    return (name_col(), col("Created At", "date", created_at, field_doc(META, "creationTimestamp")))


def template_cols(*spec_path: str, selector: Callable[[Obj], str] | None = None,
                   selector_doc: str = "") -> list[Column]:
    cols = [
        col("Containers", "string", container_names(*spec_path), "Names of each container in the template.",
             priority=1),
        col("Images", "string", container_images(*spec_path),
             "Images referenced by each container in the template.", priority=1),
    ]
    if selector is not None:
        cols.append(col("Selector", "string", selector, selector_doc, priority=1))
    return cols
