"""Calling one admission webhook: an AdmissionReview v1 POSTed over HTTPS, its answer checked.

The call is asynchronous and bounded by the webhook's ``timeoutSeconds``, so a slow or dead webhook
holds only the request that called it, never the event loop. Every way a call can fail (no
connection, TLS, timeout, a status other than 200, a body that is not an AdmissionReview for this
request, a patch that does not apply) is a :class:`WebhookCallFailed`; the caller applies the
webhook's ``failurePolicy`` to it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ssl
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from apimachinery import errors
from apiserver.admission.engine import AdmissionRequest
from apiserver.admission.webhooks import Webhook
from apiserver.patching.failures import REJECTED
from apiserver.patching.json_patch import apply_json_patch

REVIEW_VERSION = "admission.k8s.io/v1"
# A webhook's answer is small; more than this is refused rather than read into memory.
MAX_RESPONSE_BYTES = 3 * 1024 * 1024


class WebhookCallFailed(Exception):
    """The webhook could not be called or did not answer properly; ``str()`` is kube's wording."""


@dataclass
class Answer:
    allowed: bool
    status: dict[str, Any]
    patched: dict[str, Any] | None = None  # a mutating webhook's object after its patch
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)

    def denial(self, webhook: str) -> errors.StatusError:
        """kube's error for a refusal: the webhook's own status, code at least 400, message prefixed."""
        denied_by = f'admission webhook "{webhook}" denied the request'
        message = self.status.get("message") or ""
        reason = self.status.get("reason") or ""
        code = self.status.get("code")
        code = code if isinstance(code, int) and code >= 400 else 400
        if message:
            text = f"{denied_by}: {message}"
        elif reason:
            text = f"{denied_by}: {reason}"
        else:
            text = f"{denied_by} without explanation"
        return errors.StatusError(code, reason, text)


def review(req: AdmissionRequest, uid: str, user: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview sent for a request."""
    cel = req.cel_request()
    request: dict[str, Any] = {
        "uid": uid, "kind": cel["kind"], "resource": cel["resource"], "requestKind": cel["kind"],
        "requestResource": cel["resource"], "name": req.name, "namespace": req.namespace,
        "operation": req.operation, "userInfo": user, "object": req.object, "oldObject": req.old_object,
        "dryRun": req.dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1",
                    "kind": {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions"}.get(req.operation, "DeleteOptions")},
    }
    if req.subresource:
        request["subResource"] = request["requestSubResource"] = req.subresource
    if not req.namespace:
        del request["namespace"]
    return {"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview", "request": request}


class WebhookClient:
    """One HTTPS client for all webhooks of a server; TLS contexts are kept per CA bundle."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}

    def _context(self, ca_bundle: bytes | None) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            context = ssl.create_default_context()
            if ca_bundle is not None:
                context = ssl.create_default_context(cadata=ca_bundle.decode("ascii", "replace"))
            self._contexts[ca_bundle] = context
        return context

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def call(self, hook: Webhook, body: dict[str, Any], current: dict[str, Any] | None) -> Answer:
        uid = body["request"]["uid"]
        post = f'Post "{hook.url}"'
        try:
            context = self._context(hook.ca_bundle)
        except (ssl.SSLError, ValueError) as exc:
            raise WebhookCallFailed(f"failed to call webhook: {post}: invalid caBundle: {exc}") from None
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with asyncio.timeout(hook.timeout_seconds):
                async with self._session.post(hook.url, data=orjson.dumps(body), ssl=context,
                                              headers={"Content-Type": "application/json",
                                                       "Accept": "application/json"}) as resp:
                    raw = await resp.content.read(MAX_RESPONSE_BYTES + 1)
                    status = resp.status
        except TimeoutError:
            raise WebhookCallFailed(f"failed to call webhook: {post}: context deadline exceeded") from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as exc:
            raise WebhookCallFailed(f"failed to call webhook: {post}: {exc}") from None
        if status != 200:
            raise WebhookCallFailed(f"failed to call webhook: the server responded with the status code {status} "
                                    f"but did not return more information")
        if len(raw) > MAX_RESPONSE_BYTES:
            raise WebhookCallFailed("received invalid webhook response: the response is larger than "
                                    f"{MAX_RESPONSE_BYTES} bytes")
        return read_answer(raw, uid, current)


def _invalid(why: str) -> WebhookCallFailed:
    return WebhookCallFailed(f"received invalid webhook response: {why}")


def read_answer(raw: bytes, uid: str, current: dict[str, Any] | None) -> Answer:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _invalid(f"couldn't decode the response: {exc}") from None
    if not isinstance(doc, dict) or doc.get("apiVersion") != REVIEW_VERSION or doc.get("kind") != "AdmissionReview":
        raise _invalid(f'expected webhook response of {REVIEW_VERSION}, Kind=AdmissionReview')
    response = doc.get("response")
    if not isinstance(response, dict):
        raise _invalid("webhook response was absent")
    if response.get("uid") != uid:
        raise _invalid(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
    allowed = response.get("allowed")
    if not isinstance(allowed, bool):
        raise _invalid("expected response.allowed to be true or false")
    status = response.get("status") if isinstance(response.get("status"), dict) else {}
    warnings = [w for w in response.get("warnings") or [] if isinstance(w, str)]
    annotations = response.get("auditAnnotations") if isinstance(response.get("auditAnnotations"), dict) else {}
    answer = Answer(allowed, status, None, warnings, {str(k): str(v) for k, v in annotations.items()})
    patch_type, patch = response.get("patchType"), response.get("patch")
    if allowed and patch is not None:
        if patch_type != "JSONPatch":
            raise _invalid(f'expected patchType "JSONPatch", got {patch_type!r}')
        if current is None:
            raise _invalid("a patch was returned for a request without an object")
        try:
            operations = orjson.loads(base64.b64decode(patch, validate=True))
        except (binascii.Error, TypeError, ValueError) as exc:
            raise _invalid(f"the patch is not base64-encoded JSON: {exc}") from None
        try:
            answer.patched = apply_json_patch(current, operations)
        except errors.StatusError as exc:
            # The detail only: the patching code's generic 422 sentence speaks of the client's request.
            raise WebhookCallFailed(f"JSON Patch: {exc.message.removeprefix(REJECTED + ': ')}") from None
    return answer
