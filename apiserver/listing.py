"""Lists as kube's GetList serves them: a consistent page at one revision, continue tokens, selectors.

A list reads the log at one revision (the newest, the one a continue token or an Exact resourceVersion names),
in key order, filtering by label and field selectors as it goes; a page ends after ``limit`` matching objects
with a continue token that resumes after the last key at the same revision. A revision the log no longer holds
is 410 Expired; one it does not hold yet is 504 with ``ResourceVersionTooLarge``.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from apimachinery import errors
from apimachinery.errors import Cause, StatusError
from apimachinery.fieldselectors import FieldSelector
from apimachinery.selectors import LabelSelector
from apiserver.crdconversion import Converter
from apiserver.resourcetypes import ResourceType
from apiserver.store import Compacted, LogStore
from apiserver.watch import WatchBus, decode_object

RunSync = Callable[..., Awaitable[Any]]  # runs a blocking store call off the event loop


@dataclass
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None  # objects after this page (unfiltered paged lists only)


def encode_continue(rev: int, after: tuple[str, str]) -> str:
    raw = orjson.dumps({"v": "spacehub/v1", "rv": rev, "start": list(after)})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except Exception as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def parse_resource_version(value: str) -> int:
    try:
        rv = int(value)
    except ValueError as exc:
        raise errors.bad_request(f'invalid resource version "{value}"') from exc
    if rv < 0:
        raise errors.bad_request(f'invalid resource version "{value}"')
    return rv


def matches(obj: dict[str, Any], labels: LabelSelector | None, fields: FieldSelector | None) -> bool:
    if labels is not None and not labels.matches(obj.get("metadata", {}).get("labels")):
        return False
    return fields is None or fields.matches(obj)


async def list_page(store: LogStore, bus: WatchBus, run_sync: RunSync, converter: Converter, space: str,
                    rtype: ResourceType, namespace: str | None, *, labels: LabelSelector | None = None,
                    fields: FieldSelector | None = None, limit: int = 0, continue_token: str = "",
                    resource_version: str = "", resource_version_match: str = "") -> ListResult:
    """One page of a list: as of ``resource_version`` (Exact) or a continue token, or the newest revision."""
    at: int | None = None
    after: tuple[str, str] | None = None
    if continue_token:
        at, after = decode_continue(continue_token)
    elif resource_version and resource_version_match == "Exact":
        at = parse_resource_version(resource_version)
    elif resource_version and resource_version not in ("0",):
        wanted = parse_resource_version(resource_version)
        if wanted > await run_sync(store.current_revision):
            raise StatusError(504, "Timeout", f"Too large resource version: {wanted}, current: "
                              f"{bus.latest_revision}",
                              causes=[Cause("ResourceVersionTooLarge", "Too large resource version")])
    name = fields.exact_value("metadata.name") if fields is not None else None
    if namespace is None and fields is not None:
        ns_value = fields.exact_value("metadata.namespace")
        namespace = ns_value if ns_value is not None and rtype.namespaced else namespace
    filtering = (labels is not None and not labels.empty) or (fields is not None and not fields.empty)
    items: list[dict[str, Any]] = []
    rev = at
    more = False
    batch = max(limit, 500) if limit else None
    while True:
        try:
            rev, rows = await run_sync(
                store.list, space, rtype.storage_resource, namespace if rtype.namespaced else None,
                at=rev, after=after, limit=(batch + 1) if batch else None, name=name)
        except Compacted as exc:
            if continue_token:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter.") from exc
            raise errors.expired(f"too old resource version: {exc.requested} ({exc.compacted})") from exc
        except ValueError as exc:
            raise StatusError(504, "Timeout", str(exc),
                              causes=[Cause("ResourceVersionTooLarge", str(exc))]) from exc
        page_more = batch is not None and len(rows) > batch
        rows = rows[:batch] if batch is not None else rows
        # The objects a store read returns are converted together: one ConversionReview for a whole list.
        for obj in await converter.served(rtype, [decode_object(row) for row in rows]):
            if filtering and not matches(obj, labels, fields):
                continue
            items.append(obj)
            if limit and len(items) == limit:
                break
        if limit and len(items) == limit:
            last = items[-1]["metadata"]
            last_key = (last.get("namespace", ""), last["name"])
            more = page_more or rows[-1].key[2:] != last_key
            after = last_key
            break
        if not page_more:
            break
        after = (rows[-1].key.namespace, rows[-1].key.name)
    token = encode_continue(int(rev or 0), after) if more and after is not None else ""
    remaining = None
    if token and not filtering and name is None:
        # As etcd3's GetList: what the continue token would still return, only for an unfiltered list
        # (with a selector the count would include objects that do not match).
        remaining = await run_sync(store.count, space, rtype.storage_resource,
                                        namespace if rtype.namespaced else None, at=int(rev or 0), after=after)
    return ListResult(items, str(rev or 0), token, remaining)
