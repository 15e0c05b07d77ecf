"""Admission webhooks wired into the object service: mutating webhooks as ``Objects.mutate`` (before
defaulting and validation), validating webhooks as an admission step after the ValidatingAdmissionPolicies
(kube's plugin order: MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook).

Mutating webhooks are called one after another, each seeing the previous one's patch; those with
``reinvocationPolicy: IfNeeded`` are called once more if a later webhook changed the object after them.
Validating webhooks are called concurrently, and the first refusal in calling order wins. A webhook that
fails is kube's ``500 InternalError`` (``failed calling webhook "<name>": …``) under ``failurePolicy:
Fail``, and a warning to the client under ``Ignore``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
from typing import Any

from apimachinery import errors
from apiserver.admission.engine import AdmissionRequest
from apiserver.admission.webhookcall import Answer, call, review
from apiserver.admission.webhooks import Webhook, WebhookIndex
from apiserver.catalog import Catalog
from apiserver.resourcetypes import ResourceType
from apiserver.server.admission import namespace_object
from apiserver.service import Objects
from apiserver.strictdecoding import check_fields
from apiserver.webhookclient import WebhookCallFailed
from apiserver.writeoptions import WriteOptions
from cel import CelEvalError

log = logging.getLogger(__name__)
# Admission configuration is never sent to webhooks (kube exempts it too): a dead webhook matching
# everything could otherwise never be removed.
EXEMPT_GROUP = "admissionregistration.k8s.io"
# What a mutating webhook's patch may not change (the object's key).
_FIXED_METADATA = ("name", "namespace")
# Who the review says sent a request the server made itself (a controller's write).
_SERVER_USER = {"username": "system:apiserver", "groups": ["system:masters", "system:authenticated"]}


def _failed(hook: Webhook, why: str) -> errors.StatusError:
    message = f'failed calling webhook "{hook.name}": {why}'
    return errors.StatusError(500, "InternalError", f"Internal error occurred: {message}")


class Webhooks:
    """Both admission steps, sharing the index of configurations and one HTTPS client."""

    def __init__(self, index: WebhookIndex, objects: Objects, catalog: Catalog) -> None:
        self.index = index
        self.objects = objects
        self.catalog = catalog

    async def _request(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> AdmissionRequest:
        ns_object = await namespace_object(self.objects, self.catalog, space, rtype, obj, old)
        return AdmissionRequest(space, rtype, operation, obj, old, ns_object, subresource, opts.dry_run)

    async def _conditions_hold(self, hook: Webhook, req: AdmissionRequest) -> bool:
        """Whether every matchCondition is true; an evaluation error is a failed call."""
        if not hook.match_conditions:
            return True
        activation = {"object": req.object, "oldObject": req.old_object, "request": req.cel_request()}

        def evaluate() -> bool:
            return all(expr.evaluate(activation) is True for _name, expr in hook.match_conditions)

        try:
            return await self.objects.run_sync(evaluate)
        except CelEvalError as exc:
            raise WebhookCallFailed(f"failed to evaluate match conditions: {exc}") from None

    async def _call(self, hook: Webhook, req: AdmissionRequest, opts: WriteOptions) -> Answer | None:
        """The webhook's answer, or None if it does not apply or failed under ``Ignore``."""
        try:
            if not hook.matches(req) or not await self._conditions_hold(hook, req):
                return None
            user = _SERVER_USER if opts.user is None else {"username": opts.user.name,
                                                           "groups": list(opts.user.groups)}
            answer = await call(self.objects.webhook_client, hook, review(req, str(uuid.uuid4()), user), req.object)
        except WebhookCallFailed as exc:
            if hook.failure_policy == "Ignore":
                log.warning("webhook %s in space %s failed (ignored): %s", hook.name, req.space, exc)
                opts.warnings.append(f'failed calling webhook "{hook.name}": {exc}')
                return None
            raise _failed(hook, str(exc)) from None
        opts.warnings.extend(answer.warnings)
        for key, value in answer.audit_annotations.items():
            log.info("admission audit annotation %s/%s=%s (%s %s/%s in space %s)", hook.name, key, value,
                     req.operation, req.namespace, req.name, req.space)
        if not answer.allowed:
            raise answer.denial(hook.name)
        return answer

    async def mutate(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                     old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> None:
        hooks = self.index.webhooks(space, mutating=True)
        if not hooks or rtype.group == EXEMPT_GROUP:
            return
        req = await self._request(space, rtype, operation, obj, old, opts, subresource)
        if obj is None:  # a delete: nothing to patch, but a mutating webhook may refuse it
            for hook in hooks:
                await self._call(hook, req, opts)
            return
        seen_by: dict[int, dict[str, Any]] = {}  # what each IfNeeded webhook last saw
        for i, hook in enumerate(hooks):
            await self._mutate_once(hook, req, obj, opts)
            if hook.reinvoke:
                seen_by[i] = copy.deepcopy(obj)
        for i, seen in seen_by.items():
            if seen != obj:
                await self._mutate_once(hooks[i], req, obj, opts)

    async def _mutate_once(self, hook: Webhook, req: AdmissionRequest, obj: dict[str, Any],
                           opts: WriteOptions) -> None:
        answer = await self._call(hook, req, opts)
        if answer is None or answer.patched is None:
            return
        patched, meta = answer.patched, obj["metadata"]
        new_meta = patched.get("metadata")
        failure = ""
        if not isinstance(new_meta, dict) or any(new_meta.get(k) != meta.get(k) for k in _FIXED_METADATA):
            failure = "the patch changes metadata.name or metadata.namespace, which admission may not change"
        else:
            try:  # decoded as kube decodes a patched object: wrong types refused, unknown fields dropped
                check_fields(self.catalog, req.rtype, patched, "Ignore", [], patch=True)
            except errors.StatusError as exc:
                failure = f"the patched object cannot be decoded: {exc.message}"
        if failure:
            if hook.failure_policy == "Fail":
                raise _failed(hook, failure)
            opts.warnings.append(f'failed calling webhook "{hook.name}": {failure}')
            return
        # In place, the metadata dict included: the caller holds both.
        meta.clear()
        meta.update(new_meta)
        obj.clear()
        obj.update(patched)
        obj["metadata"] = meta

    async def validate(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> None:
        hooks = self.index.webhooks(space, mutating=False)
        if not hooks or rtype.group == EXEMPT_GROUP:
            return
        req = await self._request(space, rtype, operation, obj, old, opts, subresource)
        outcomes = await asyncio.gather(*(self._call(hook, req, opts) for hook in hooks), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def admit_delete(self, space: str, rtype: ResourceType, operation: str, obj: dict[str, Any] | None,
                           old: dict[str, Any] | None, opts: WriteOptions, subresource: str) -> None:
        """A delete goes past the mutating webhooks, then the validating ones, as in kube."""
        await self.mutate(space, rtype, operation, obj, old, opts, subresource)
        await self.validate(space, rtype, operation, obj, old, opts, subresource)
