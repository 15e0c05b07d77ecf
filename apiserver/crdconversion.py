"""Serving a custom resource in a version other than the one it is stored in.

Every read (get, list, watch) and write (create, update, patch, delete) goes through one
:class:`Converter`. A CRD with ``conversion.strategy: None`` only has ``apiVersion`` rewritten; one with
``strategy: Webhook`` has its objects sent to the webhook in one ConversionReview v1 per request (a
list's objects together, as kube sends them), over the shared HTTPS client. The webhook's answer is
checked as kube-apiserver's webhook converter checks it: one object per object sent, in the desired
version, same kind, name, namespace and uid; all other metadata is restored from the original, except
labels and annotations, which the webhook may change (and which must then be valid).

A failure is kube's error for it: status 500 with ``conversion webhook for <group>/<version>,
Kind=<Kind> failed: …`` (the version the objects were in), without a reason, as kube-apiserver answers a
plain error.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from apimachinery import errors
from apimachinery.names import validate_annotations, validate_labels
from apiserver.resourcetypes import ConversionWebhook, ResourceType, served
from apiserver.webhookclient import WebhookCallFailed, WebhookClient

REVIEW_VERSION = "apiextensions.k8s.io/v1"
# kube-apiserver calls conversion webhooks with a fixed 30s timeout.
TIMEOUT_SECONDS = 30.0


def _gvk(api_version: str, kind: str) -> str:
    """Go's ``GroupVersionKind.String()``."""
    return f"{api_version}, Kind={kind}"


def _failure(message: str) -> errors.StatusError:
    return errors.StatusError(500, "", message)


def _same_identity(original: dict[str, Any], converted: dict[str, Any]) -> str | None:
    """kube's validateConvertedObject: what the webhook may not change, as its error says it."""
    before, after = original.get("metadata") or {}, converted.get("metadata") or {}
    if not isinstance(after, dict):
        after = {}
    if original.get("kind") != converted.get("kind"):
        return f"must have the same kind: {original.get('kind')} != {converted.get('kind')}"
    for field_name, label in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        if (before.get(field_name) or "") != (after.get(field_name) or ""):
            return f"must have the same {label}: {before.get(field_name) or ''} != {after.get(field_name) or ''}"
    return None


def _restore_metadata(original: dict[str, Any], converted: dict[str, Any]) -> str | None:
    """kube's restoreObjectMeta: the original's metadata with the webhook's labels and annotations."""
    answered = converted.get("metadata")
    if answered is None:
        return "missing metadata in converted object"
    if not isinstance(answered, dict):
        return f"invalid metadata of type {type(answered).__name__} in converted object"
    meta = orjson.loads(orjson.dumps(original.get("metadata") or {}))
    for field_name, check in (("labels", validate_labels), ("annotations", validate_annotations)):
        value = answered.get(field_name)
        if value is None:
            meta.pop(field_name, None)
            continue
        if not isinstance(value, dict):
            return f"invalid metadata.{field_name} of type {type(value).__name__} in converted object"
        for key, item in value.items():
            if not isinstance(item, str):
                return (f"metadata.{field_name}[{key}] must be a string, but is {type(item).__name__} in "
                        "converted object")
        if value != meta.get(field_name):
            causes = check(value)
            if causes:
                return ", ".join(f"{c.field}: {c.message}" for c in causes)
        meta[field_name] = value
    converted["metadata"] = meta
    return None


def _converted_objects(raw: bytes, uid: str) -> list[Any]:
    """The objects of a ConversionReview answer; raises WebhookCallFailed with kube's reason otherwise."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise WebhookCallFailed(str(exc)) from None
    if not isinstance(doc, dict) or doc.get("apiVersion") != REVIEW_VERSION or doc.get("kind") != "ConversionReview":
        got = _gvk(doc.get("apiVersion", ""), doc.get("kind", "")) if isinstance(doc, dict) else "nothing"
        raise WebhookCallFailed(f"expected webhook response of {_gvk(REVIEW_VERSION, 'ConversionReview')}, got {got}")
    response = doc.get("response")
    if not isinstance(response, dict):
        raise WebhookCallFailed("no response provided")
    if response.get("uid") != uid:
        raise WebhookCallFailed(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    result = response.get("result") if isinstance(response.get("result"), dict) else {}
    if result.get("status") != "Success":
        message = result.get("message")
        if isinstance(message, str) and message:
            raise WebhookCallFailed(message)
        raise WebhookCallFailed(f"response.result.status was '{result.get('status') or ''}', not 'Success'")
    objects = response.get("convertedObjects")
    return objects if isinstance(objects, list) else []


class Converter:
    """Objects from their stored version to the requested one and back, for every kind a server serves."""

    def __init__(self, client: WebhookClient) -> None:
        self.client = client

    async def served(self, rtype: ResourceType, objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stored objects as ``rtype``'s version shows them (one webhook call for all that need one)."""
        hook = rtype.conversion_webhook
        if hook is None:
            return [served(rtype, obj) for obj in objs]
        return await self._convert(hook, objs, rtype.api_version)

    async def served_one(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return (await self.served(rtype, [obj]))[0]

    async def to_storage(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """An object in ``rtype``'s version as it is stored: in the storage version (``obj`` is left alone)."""
        hook = rtype.conversion_webhook
        if hook is None:
            return obj
        return (await self._convert(hook, [obj], rtype.storage_api_version))[0]

    async def _convert(self, hook: ConversionWebhook, objs: list[dict[str, Any]],
                       desired: str) -> list[dict[str, Any]]:
        pending = [i for i, obj in enumerate(objs) if obj.get("apiVersion") != desired]
        if not pending:
            return objs
        first = objs[pending[0]]
        source = _gvk(first.get("apiVersion", ""), first.get("kind", ""))
        uid = str(uuid.uuid4())
        review = {"apiVersion": REVIEW_VERSION, "kind": "ConversionReview", "request": {
            "uid": uid, "desiredAPIVersion": desired, "objects": [objs[i] for i in pending]}}
        try:
            raw = await self.client.post(hook.url, hook.ca_bundle, TIMEOUT_SECONDS, review)
            converted = _converted_objects(raw, uid)
        except WebhookCallFailed as exc:
            raise _failure(f"conversion webhook for {source} failed: {exc}") from None
        if len(converted) != len(pending):
            raise _failure(f"conversion webhook for {source} returned {len(converted)} objects, "
                           f"expected {len(pending)}")
        out = list(objs)
        for index, (position, answer) in enumerate(zip(pending, converted, strict=True)):
            original = objs[position]
            invalid = f"conversion webhook for {source} returned invalid converted object at index {index}"
            if not isinstance(answer, dict):
                raise _failure(f"{invalid}: not an object")
            if answer.get("apiVersion") != desired:
                raise _failure(f"{invalid}: invalid groupVersion (expected {desired}, received "
                               f"{answer.get('apiVersion') or ''})")
            why = _same_identity(original, answer)
            if why is not None:
                raise _failure(f"{invalid}: {why}")
            why = _restore_metadata(original, answer)
            if why is not None:
                raise _failure(f"conversion webhook for {source} returned invalid metadata in object at index "
                               f"{index}: {why}")
            out[position] = answer
        return out
