"""Query parameters read the way kube-apiserver converts them into its option structs.

apimachinery's ``runtime.Convert_Slice_string_To_bool`` (and its pointer twin) decide every boolean
parameter (``watch``, ``allowWatchBookmarks``, ``sendInitialEvents``, ``force``, ``orphanDependents``):
absent is false (or unset), the first value ``0`` or ``false`` in any letter case is false, and anything
else — ``True`` from Python clients, ``1``, ``t``, even an empty value — is true.
"""

from __future__ import annotations

from starlette.datastructures import QueryParams


def query_bool(params: QueryParams, name: str) -> bool:
    return bool(optional_query_bool(params, name))


def optional_query_bool(params: QueryParams, name: str) -> bool | None:
    """None when the parameter is absent."""
    values = params.getlist(name)
    if not values:
        return None
    first = values[0]
    return not (first == "0" or first.casefold() == "false")
