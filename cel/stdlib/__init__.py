"""CEL's standard library, assembled: importing this package registers every function family below.

The functions land in :data:`cel.types.REGISTRY`, the one table the checker, the cost
estimator and the evaluator look them up in. The families follow cel-go's cut lines (``common/stdlib``
and the ``ext`` libraries Kubernetes enables); the additions of Kubernetes' ``lists`` and ``regex``
libraries sit in the list, string and regex families, and its object libraries (format, URL, IP,
CIDR, Quantity) in :mod:`cel.k8s`:

- :mod:`~cel.stdlib.operators`: arithmetic, equality, ordering, ``in`` and ``size``;
- :mod:`~cel.stdlib.conversions`: ``int``, ``uint``, ``double``, ``string``, ``bytes``, ``bool``,
  ``dyn``, ``type``;
- :mod:`~cel.stdlib.timestamps`: ``timestamp``, ``duration`` and the time getters;
- :mod:`~cel.stdlib.strings`, :mod:`~cel.stdlib.regex` and
  :mod:`~cel.stdlib.formatting`: string functions, RE2 matching, ``format``;
- :mod:`~cel.stdlib.lists`, :mod:`~cel.stdlib.sets`: the list and set extensions;
- :mod:`~cel.stdlib.optional`: ``optional.of`` and friends.

Every function charges the meter for work proportional to its input *before* doing it (cel-go's 0.1
per character or element), so no single call can run away. Shared argument checks are in
:mod:`~cel.stdlib.arguments`, integer and time range checks in :mod:`~cel.stdlib.overflow`.
"""

# Imported for their registrations only.
from cel.stdlib import (  # noqa: F401
    conversions,
    formatting,
    lists,
    operators,
    optional,
    regex,
    sets,
    strings,
    timestamps,
)
