"""Status coming home: what clusters report, turned into what users see in their spaces.

Owns the reported state, status on the workload objects (singleton and multi-cluster), the PlacementStatus
summaries and the Events of each object's story. It may import ``placement``, ``inventory`` and ``spaces``;
never ``sync``, ``syncer``, ``hub``, ``sim`` or ``spacehub``.
"""
