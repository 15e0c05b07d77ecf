"""Status coming home: what clusters report, turned into what users see in their spaces.

Owns the reported state, status on the workload objects (singleton, and multi-cluster through
``aggregate``), the PlacementStatus summaries, StatusCollectors (``collectors``) and their CombinedStatus,
the Events of each object's story and upsynced objects. It may import ``placement``, ``inventory`` and
``spaces``; never ``sync``, ``syncer``, ``hub``, ``sim`` or ``spacehub``.
"""
