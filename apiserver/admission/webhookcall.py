"""Calling one admission webhook: an AdmissionReview v1 POSTed over HTTPS (``apiserver.webhookclient``),
its answer checked.

Every way a call can fail (the transport's failures, a body that is not an AdmissionReview for this
request, a patch that does not apply) is a :class:`WebhookCallFailed`; the caller applies the
webhook's ``failurePolicy`` to it.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import orjson

from apimachinery import errors
from apiserver.admission.engine import AdmissionRequest
from apiserver.admission.webhooks import Webhook
from apiserver.patching.failures import REJECTED
from apiserver.patching.json_patch import apply_json_patch
from apiserver.webhookclient import WebhookCallFailed, WebhookClient

REVIEW_VERSION = "admission.k8s.io/v1"


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


async def call(client: WebhookClient, hook: Webhook, body: dict[str, Any], current: dict[str, Any] | None) -> Answer:
    """The webhook's checked answer to an AdmissionReview."""
    try:
        raw = await client.post(hook.url, hook.ca_bundle, hook.timeout_seconds, body)
    except WebhookCallFailed as exc:
        raise (_invalid(str(exc)) if exc.unreadable else WebhookCallFailed(f"failed to call webhook: {exc}")) from None
    return read_answer(raw, body["request"]["uid"], current)


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
