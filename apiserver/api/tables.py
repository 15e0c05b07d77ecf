"""Server-side printing: objects to ``meta.k8s.io`` Tables with each kind's columns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apiserver.builtin.tables.columns import default_columns
from apiserver.resourcetypes import Column, ResourceType


def _columns(rtype: ResourceType) -> tuple[Column, ...]:
    return rtype.columns or tuple(default_columns())


def _row_object(obj: dict[str, Any], include: str, version: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}",
            "metadata": obj.get("metadata", {})}


def _cells(columns: tuple[Column, ...], obj: dict[str, Any]) -> list[Any]:
    cells = []
    for col in columns:
        try:
            cells.append(col.cell(obj))
        except Exception:  # a malformed stored object must not break listing everything else
            cells.append("<error>")
    return cells


def to_table(rtype: ResourceType, objs: Iterable[dict[str, Any]], *, version: str, include: str,
             resource_version: str = "", continue_token: str = "", remaining_item_count: int | None = None,
             headers: bool = True) -> dict[str, Any]:
    columns = _columns(rtype)
    rows = []
    for obj in objs:
        row: dict[str, Any] = {"cells": _cells(columns, obj)}
        embedded = _row_object(obj, include, version)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    meta: dict[str, Any] = {}
    if resource_version:
        meta["resourceVersion"] = resource_version
    if continue_token:
        meta["continue"] = continue_token
    if remaining_item_count is not None:
        meta["remainingItemCount"] = remaining_item_count
    return {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": meta,
        "columnDefinitions": [c.definition() for c in columns] if headers else [],
        "rows": rows,
    }
