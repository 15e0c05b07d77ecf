"""Field tables of apimachinery's messages: ``meta/v1`` ObjectMeta and friends, and the wire form of the
hand-written types (Time, Quantity, IntOrString, FieldsV1) and of the ``runtime.Unknown`` envelope.

Rows follow the Go struct tags of ``k8s.io/apimachinery`` (v0.37) and its ``generated.proto`` files.
"""

from __future__ import annotations

from apiserver.protobuf.schema import (
    BOOL,
    BYTES,
    FIELDS_V1,
    INT32,
    INT64,
    KEEP,
    LIST,
    OMITZERO,
    PTR,
    STRING,
    TIME,
    MapOf,
    Table,
    table,
)

MESSAGES: dict[str, Table] = {
    "meta.ObjectMeta": table(
        (1, "name", STRING),
        (2, "generateName", STRING),
        (3, "namespace", STRING),
        (4, "selfLink", STRING),
        (5, "uid", STRING),
        (6, "resourceVersion", STRING),
        (7, "generation", INT64),
        (8, "creationTimestamp", TIME, OMITZERO),
        (9, "deletionTimestamp", TIME, PTR),
        (10, "deletionGracePeriodSeconds", INT64, PTR),
        (11, "labels", MapOf(STRING, STRING)),
        (12, "annotations", MapOf(STRING, STRING)),
        (13, "ownerReferences", "meta.OwnerReference", LIST),
        (14, "finalizers", STRING, LIST),
        (17, "managedFields", "meta.ManagedFieldsEntry", LIST),
    ),
    "meta.OwnerReference": table(
        (5, "apiVersion", STRING, KEEP),
        (1, "kind", STRING, KEEP),
        (3, "name", STRING, KEEP),
        (4, "uid", STRING, KEEP),
        (6, "controller", BOOL, PTR),
        (7, "blockOwnerDeletion", BOOL, PTR),
    ),
    "meta.ManagedFieldsEntry": table(
        (1, "manager", STRING),
        (2, "operation", STRING),
        (3, "apiVersion", STRING),
        (4, "time", TIME, PTR),
        (6, "fieldsType", STRING),
        (7, "fieldsV1", FIELDS_V1, PTR),
        (8, "subresource", STRING),
    ),
    "meta.Condition": table(
        (1, "type", STRING, KEEP),
        (2, "status", STRING, KEEP),
        (3, "observedGeneration", INT64),
        (4, "lastTransitionTime", TIME, KEEP),
        (5, "reason", STRING, KEEP),
        (6, "message", STRING, KEEP),
    ),
    "meta.LabelSelector": table(
        (1, "matchLabels", MapOf(STRING, STRING)),
        (2, "matchExpressions", "meta.LabelSelectorRequirement", LIST),
    ),
    "meta.LabelSelectorRequirement": table(
        (1, "key", STRING, KEEP),
        (2, "operator", STRING, KEEP),
        (3, "values", STRING, LIST),
    ),
    "meta.FieldSelectorRequirement": table(
        (1, "key", STRING, KEEP),
        (2, "operator", STRING, KEEP),
        (3, "values", STRING, LIST),
    ),
    # The hand-written types: their wire messages, turned into their JSON forms by the decoder.
    "meta.Time": table(
        (1, "seconds", INT64),
        (2, "nanos", INT32),
    ),
    "resource.Quantity": table(
        (1, "string", STRING),
    ),
    "intstr.IntOrString": table(
        (1, "type", INT64),
        (2, "intVal", INT32),
        (3, "strVal", STRING),
    ),
    "meta.FieldsV1": table(
        (1, "Raw", BYTES),
    ),
    # The envelope after the magic prefix: the object's own message travels in ``raw``.
    "runtime.Unknown": table(
        (1, "typeMeta", "runtime.TypeMeta"),
        (2, "raw", BYTES),
        (3, "contentEncoding", STRING),
        (4, "contentType", STRING),
    ),
    "runtime.TypeMeta": table(
        (1, "apiVersion", STRING),
        (2, "kind", STRING),
    ),
}
