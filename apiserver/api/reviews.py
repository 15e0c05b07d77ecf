"""Reviews a client asks about itself: SelfSubjectReview, SelfSubjectAccessReview, SelfSubjectRulesReview.

``kubectl auth whoami`` and ``kubectl auth can-i`` POST these; the answer comes from the identity the
server's authenticator established (``apiserver.identity``) and the authorizer the server runs with
(``apiserver.access``), and nothing is stored — as kube-apiserver's ``selfsubject*review`` REST handlers.
"""

from __future__ import annotations

import copy
from typing import Any

from apimachinery import errors
from apiserver.access import Attributes, Authorizer
from apiserver.identity import Identity
from apiserver.writeoptions import now_rfc3339

SELF_SUBJECT_REVIEW = "selfsubjectreviews.authentication.k8s.io"
ACCESS_REVIEW = "selfsubjectaccessreviews.authorization.k8s.io"
RULES_REVIEW = "selfsubjectrulesreviews.authorization.k8s.io"
REVIEWS = frozenset({SELF_SUBJECT_REVIEW, ACCESS_REVIEW, RULES_REVIEW})
ANONYMOUS = Identity("system:anonymous", ("system:unauthenticated",))


def answer(resource: str, body: Any, identity: Identity | None, authorizer: Authorizer, space: str) -> dict[str, Any]:
    """The review ``body`` (already decoded) with its status filled in."""
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    who = identity or ANONYMOUS
    if resource == SELF_SUBJECT_REVIEW:
        return _self_subject(body, who)
    if resource == ACCESS_REVIEW:
        return _access(body, who, authorizer, space)
    return _rules(body, who, authorizer, space)


def _self_subject(body: dict[str, Any], who: Identity) -> dict[str, Any]:
    user: dict[str, Any] = {"username": who.name}
    if who.groups:
        user["groups"] = list(who.groups)
    return {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": now_rfc3339()}, "status": {"userInfo": user}}


def _access(body: dict[str, Any], who: Identity, authorizer: Authorizer, space: str) -> dict[str, Any]:
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is None and non_resource is None:
        # apiserver's ValidateSelfSubjectAccessReviewSpec, word for word (the value is the nil pointer).
        raise errors.invalid("SelfSubjectAccessReview", "authorization.k8s.io", "", [errors.Cause(
            "FieldValueInvalid", 'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
            "must be specified", "spec.resourceAttributes")])
    if resource is not None and non_resource is not None:
        shown = (f'authorization.NonResourceAttributes{{Path:"{non_resource.get("path") or ""}", '
                 f'Verb:"{non_resource.get("verb") or ""}"}}') if isinstance(non_resource, dict) else "null"
        raise errors.invalid("SelfSubjectAccessReview", "authorization.k8s.io", "", [errors.Cause(
            "FieldValueInvalid", f"Invalid value: {shown}: cannot be specified in combination with resourceAttributes",
            "spec.nonResourceAttributes")])
    if not isinstance(resource or non_resource, dict):
        raise errors.bad_request("spec.resourceAttributes and spec.nonResourceAttributes must be objects")
    if resource is not None:
        attrs = Attributes(verb=str(resource.get("verb") or ""), namespace=str(resource.get("namespace") or ""),
                           group=str(resource.get("group") or ""), version=str(resource.get("version") or ""),
                           resource=str(resource.get("resource") or ""),
                           subresource=str(resource.get("subresource") or ""), name=str(resource.get("name") or ""))
    else:
        attrs = Attributes(verb=str(non_resource.get("verb") or ""), path=str(non_resource.get("path") or "/"))
    decision = authorizer.authorize(space, who, attrs)
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.denied:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    out = copy.deepcopy(body)
    out.setdefault("metadata", {})
    out["status"] = status
    return out


def _rules(body: dict[str, Any], who: Identity, authorizer: Authorizer, space: str) -> dict[str, Any]:
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    rules = authorizer.rules(space, who, str(spec.get("namespace") or ""))
    status: dict[str, Any] = {
        "resourceRules": [_drop_empty({"verbs": list(r.verbs), "apiGroups": list(r.api_groups),
                                       "resources": list(r.resources), "resourceNames": list(r.resource_names)})
                          for r in rules.resource_rules],
        "nonResourceRules": [_drop_empty({"verbs": list(r.verbs), "nonResourceURLs": list(r.urls)})
                             for r in rules.non_resource_rules],
        "incomplete": rules.incomplete}
    if rules.evaluation_error:
        status["evaluationError"] = rules.evaluation_error
    out = copy.deepcopy(body)
    out.setdefault("metadata", {})
    out["status"] = status
    return out


def _drop_empty(rule: dict[str, Any]) -> dict[str, Any]:
    """``omitempty`` on every list but ``verbs``."""
    return {k: v for k, v in rule.items() if v or k == "verbs"}
