"""Status from many clusters: one object's reported ``.status`` combined, and StatusCollectors evaluated.

Two pure libraries and the kinds they need: ``aggregate`` folds the statuses several clusters report for
one workload object into the status it shows in its space (KubeStellar's multi-WEC rules);
``collectors`` compiles a StatusCollector's CEL and evaluates it over the clusters' rows into a
CombinedStatus result; ``kinds`` serves StatusCollector and CombinedStatus from our own CRD definitions.
Nothing here reads the store, writes objects or talks to a cluster: the hub wires it. It imports
``spaces`` only; never ``sync``, ``syncer``, ``hub``, ``sim`` or ``spacehub``.
"""
