"""Field tables of the review kinds: ``authentication.k8s.io/v1`` SelfSubjectReview and
``authorization.k8s.io/v1`` SelfSubjectAccessReview and SelfSubjectRulesReview (v0.37 struct tags).

``kubectl auth whoami`` and ``kubectl auth can-i`` send these through typed clients, so as protobuf; so does
``kubectl create token`` its ``authentication.k8s.io/v1`` TokenRequest.
``UserInfo.extra`` (``map[string]ExtraValue``, a list in JSON) is left out: clients never send it, and a
request that does is refused with 415 rather than decoded into the wrong shape.
"""

from __future__ import annotations

from apiserver.protobuf.schema import BOOL, INT64, KEEP, LIST, PTR, STRING, Table, table

MESSAGES: dict[str, Table] = {
    "authentication.TokenRequest": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "authentication.TokenRequestSpec", KEEP),
        (3, "status", "authentication.TokenRequestStatus"),
    ),
    "authentication.TokenRequestSpec": table(
        (1, "audiences", STRING, LIST | KEEP),
        (4, "expirationSeconds", INT64, PTR),
        (3, "boundObjectRef", "authentication.BoundObjectReference", PTR),
    ),
    "authentication.BoundObjectReference": table(
        (1, "kind", STRING),
        (2, "apiVersion", STRING),
        (3, "name", STRING),
        (4, "uid", STRING),
    ),
    "authentication.TokenRequestStatus": table(
        (1, "token", STRING, KEEP),
        (2, "expirationTimestamp", "meta.Time", KEEP),
    ),
    "authentication.SelfSubjectReview": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "status", "authentication.SelfSubjectReviewStatus"),
    ),
    "authentication.SelfSubjectReviewStatus": table(
        (1, "userInfo", "authentication.UserInfo"),
    ),
    "authentication.UserInfo": table(
        (1, "username", STRING),
        (2, "uid", STRING),
        (3, "groups", STRING, LIST),
    ),
    "authorization.SelfSubjectAccessReview": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "authorization.SelfSubjectAccessReviewSpec", KEEP),
        (3, "status", "authorization.SubjectAccessReviewStatus"),
    ),
    "authorization.SelfSubjectAccessReviewSpec": table(
        (1, "resourceAttributes", "authorization.ResourceAttributes", PTR),
        (2, "nonResourceAttributes", "authorization.NonResourceAttributes", PTR),
    ),
    "authorization.ResourceAttributes": table(
        (1, "namespace", STRING),
        (2, "verb", STRING),
        (3, "group", STRING),
        (4, "version", STRING),
        (5, "resource", STRING),
        (6, "subresource", STRING),
        (7, "name", STRING),
        (8, "fieldSelector", "authorization.FieldSelectorAttributes", PTR),
        (9, "labelSelector", "authorization.LabelSelectorAttributes", PTR),
    ),
    "authorization.FieldSelectorAttributes": table(
        (1, "rawSelector", STRING),
        (2, "requirements", "meta.FieldSelectorRequirement", LIST),
    ),
    "authorization.LabelSelectorAttributes": table(
        (1, "rawSelector", STRING),
        (2, "requirements", "meta.LabelSelectorRequirement", LIST),
    ),
    "authorization.NonResourceAttributes": table(
        (1, "path", STRING),
        (2, "verb", STRING),
    ),
    "authorization.SubjectAccessReviewStatus": table(
        (1, "allowed", BOOL, KEEP),
        (4, "denied", BOOL),
        (2, "reason", STRING),
        (3, "evaluationError", STRING),
    ),
    "authorization.SelfSubjectRulesReview": table(
        (1, "metadata", "meta.ObjectMeta"),
        (2, "spec", "authorization.SelfSubjectRulesReviewSpec", KEEP),
        (3, "status", "authorization.SubjectRulesReviewStatus"),
    ),
    "authorization.SelfSubjectRulesReviewSpec": table(
        (1, "namespace", STRING),
    ),
    "authorization.SubjectRulesReviewStatus": table(
        (1, "resourceRules", "authorization.ResourceRule", LIST | KEEP),
        (2, "nonResourceRules", "authorization.NonResourceRule", LIST | KEEP),
        (3, "incomplete", BOOL, KEEP),
        (4, "evaluationError", STRING),
    ),
    "authorization.ResourceRule": table(
        (1, "verbs", STRING, LIST | KEEP),
        (2, "apiGroups", STRING, LIST),
        (3, "resources", STRING, LIST),
        (4, "resourceNames", STRING, LIST),
    ),
    "authorization.NonResourceRule": table(
        (1, "verbs", STRING, LIST | KEEP),
        (2, "nonResourceURLs", STRING, LIST),
    ),
}
