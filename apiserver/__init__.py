"""apiserver: a Kubernetes API server for many spaces at once.

The log-structured store and its watch, the generic object service with each kind's strategy, CRDs with
their schemas and CEL rules, patching and server-side apply, admission, RBAC, OpenAPI, protobuf bodies, the
HTTP API under ``/clusters/<space>``, the controllers every Kubernetes API server runs (namespaces, garbage
collection, CRDs), and what a serving process needs (TLS, its endpoint). It knows a space only by its id and
path (``spacepaths``); what a Space is (its kind, lifecycle, providers, bindings) is the ``spaces`` package's,
which it must never import, nor anything above it.
"""
