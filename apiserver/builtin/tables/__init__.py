"""Table columns of the built-in kinds: what ``kubectl get`` prints, as the server-side printers define it.

Column names, types, formats, priorities (1 = only with ``-o wide``) and cell renderings follow
kube-apiserver's ``pkg/printers/internalversion`` handlers, one module per API group family; kinds that
have no handler upstream (Roles, LimitRanges, CRDs …) get the generic ``Name`` / ``Created At`` table of
``rest.DefaultTableConvertor``. The server always renders the wide cells (kubectl hides priority-1
columns itself), so every column has a cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from apiserver.builtin.tables import cluster, core, networking, storedonly, workloads
from apiserver.builtin.tables.columns import default_columns
from apiserver.resourcetypes import Column

_BUILDERS: dict[tuple[str, str], Callable[[], Iterable[Column]]] = {
    **core.BUILDERS, **workloads.BUILDERS, **networking.BUILDERS, **cluster.BUILDERS,
    **storedonly.BUILDERS}


def columns_for(group: str, kind: str) -> tuple[Column, ...]:
    """The columns of ``group``/``kind`` in kubectl's order; Name and Age for kinds without their own."""
    builder = _BUILDERS.get((group, kind))
    return tuple(builder()) if builder else default_columns()
