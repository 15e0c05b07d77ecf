"""The pod tunnel both ends share (docs/sync-protocol.md, "The tunnel"): its wire format (``frames``), what it
may carry (``rules``) and the multiplexer running many flow-controlled streams over one WebSocket (``mux``).

The hub (``sync.tunnel``) and the syncer (``syncer.tunnel``) import these same modules, so the two ends
cannot disagree on the format or on what is allowed. Imports ``apimachinery.errors`` only; never anything of the
hub's or the syncer's, and no HTTP or WebSocket library (each end adapts its own to ``mux.Transport``).
"""
