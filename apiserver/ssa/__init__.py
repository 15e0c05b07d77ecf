"""Server-side apply internals: typed operations (:mod:`.typed`), conflict errors
(:mod:`.conflicts`) and kubectl's client-side-apply upgrade (:mod:`.lastapplied`).

The entry point is :func:`apiserver.apply.server_side_apply`.
"""
