"""The hub process: composes the space runtime, inventory, placement and the sync server into one service.

Owns ``HubCore`` (what runs and in which order it starts and stops), the ASGI app with its routes,
bearer-token authentication, the in-flight limit, metrics and ``spacehub hub serve``. It must never
import ``syncer`` (the agent reaches the hub only over HTTP), ``sim`` or ``spacehub``.
"""
