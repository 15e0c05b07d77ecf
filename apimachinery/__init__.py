"""apimachinery: the rules every Kubernetes object follows, one copy of each.

Status errors, names and label rules with apimachinery's own messages, label and field selectors,
quantities, durations, field paths, Go's renderings of values, JSONPath. Pure functions over plain JSON: it
must never import another package of spacehub, and everything else (the API server, the syncer, placement) takes
these rules from here.
"""
