"""The hub's end of the syncer connection: the ``/syncer/v1`` API the hub mounts (docs/sync-protocol.md).

Syncers dial inward over plain HTTPS. This package holds the long-lived NDJSON stream of each target's desired
set and its changes (``stream``, with lines encoded once and shared, ``frames``/``messages``, and parked streams
written straight to their sockets after each drain, ``broadcast``/``direct``), the requests that bring
heartbeats to the inventory's health records and reports, Events and upsynced objects to ``status``
(``server``, ``routes``), and the pod tunnels each syncer keeps open with the API the hub reaches a cluster's
pods through (``tunnel``). It keeps no reported state (``status`` does), never computes placement and never
talks to a cluster (the agent is ``syncer``). It may import ``status``, ``placement``, ``inventory`` and the
packages below them; never ``hub``, ``sim``, ``syncer`` or ``spacehub``.
"""
