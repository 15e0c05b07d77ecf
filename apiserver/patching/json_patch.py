"""JSON patch (RFC 6902, ``application/json-patch+json``), applied with the ``jsonpatch`` library.

The operations run one at a time so that a failure can name the operation, its index and its path.
Like the kube-apiserver, a patch that cannot be applied is a 422, a body that is not a list of
operation objects is a 400, and more than 10,000 operations is a 413.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from apimachinery.errors import StatusError
from apiserver.patching.failures import malformed, rejected

# The kube-apiserver's limit (maxJSONPatchOperations); it bounds the work one request can cause.
MAX_OPERATIONS = 10000

_APPLY_ERRORS = (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError,
                 KeyError, IndexError, AttributeError)


def apply_json_patch(current: dict[str, Any], operations: list[Any]) -> dict[str, Any]:
    """Apply a list of RFC 6902 operations to an object; neither argument is modified."""
    if not isinstance(operations, list):
        raise malformed("a json patch must be a JSON array of operations")
    if len(operations) > MAX_OPERATIONS:
        raise StatusError(413, "RequestEntityTooLarge",
                          f"Request entity too large: The allowed maximum operations in a JSON patch is "
                          f"{MAX_OPERATIONS}, got {len(operations)}")
    for index, operation in enumerate(operations):
        if not isinstance(operation, dict):
            raise malformed(f"json patch operation {index} is not a JSON object")
    doc: Any = copy.deepcopy(current)
    for index, operation in enumerate(copy.deepcopy(operations)):
        doc = _apply_one(doc, index, operation)
    if not isinstance(doc, dict):
        raise rejected("the json patch replaced the object with something that is not a JSON object")
    return doc


def _apply_one(doc: Any, index: int, operation: dict[str, Any]) -> Any:
    try:
        # `doc` is our private copy, so applying in place is safe and avoids a copy per operation.
        return jsonpatch.JsonPatch([operation]).apply(doc, in_place=True)
    except _APPLY_ERRORS as e:
        raise rejected(f"{_describe(index, operation)} failed: {_reason(e)}") from None


def _describe(index: int, operation: dict[str, Any]) -> str:
    op = operation.get("op")
    path = operation.get("path")
    text = f"json patch operation {index} ({_short(op)} {_short(path)}"
    if "from" in operation:
        text += f" from {_short(operation['from'])}"
    return text + ")"


def _reason(error: Exception) -> str:
    if isinstance(error, jsonpatch.JsonPatchTestFailed):
        return "test failed: the value at the path is different"
    if isinstance(error, jsonpatch.JsonPatchPathNotFound):
        return "the path does not exist"
    if isinstance(error, jsonpatch.JsonPatchConflict):
        return str(error)
    if isinstance(error, jsonpatch.InvalidJsonPatch):
        return f"invalid operation: {error}"
    if isinstance(error, jsonpatch.JsonPointerException):
        message = str(error)
        # The library quotes the whole parent document when a member is missing; keep it out.
        return "the path does not exist" if " not found in " in message else message
    return "the path does not address a value this operation can change"


def _short(value: Any, limit: int = 200) -> str:
    text = f'"{value}"' if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
