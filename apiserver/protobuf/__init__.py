"""Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``), decoded into JSON objects.

kubectl's generator subcommands (``kubectl create deployment|secret|role …``) send protobuf since 1.32.
:func:`decode_protobuf_body` turns such a body into the dict the same object would have been as JSON, so
everything after the codec stays JSON-only. Only the generators' kinds are decoded (:func:`supports`);
other kinds, and fields the tables do not know, are refused with 415 so the client can send JSON instead.

The one protobuf spacehub writes is the OpenAPI v2 document kubectl validates against
(:mod:`apiserver.openapi.gnostic`, on the writing half of the wire format in :mod:`apiserver.protobuf.writer`).
"""

from apiserver.protobuf.decoder import MAGIC, MEDIA_TYPE, decode_protobuf_body, supports

__all__ = ["MAGIC", "MEDIA_TYPE", "decode_protobuf_body", "supports"]
