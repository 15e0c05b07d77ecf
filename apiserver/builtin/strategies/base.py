""":class:`BuiltinStrategy`, the base of every built-in kind's strategy: server-owned ``status`` and
defaulting on every write.
"""

from __future__ import annotations

import copy

from apiserver.builtin.strategies.objectfields import Obj
from apiserver.resourcetypes import Strategy


class BuiltinStrategy(Strategy):
    """Status handling shared by the built-in kinds, and defaulting on every write.

    ``has_status`` kinds own a server-side ``status``: creates start from :meth:`initial_status`,
    updates keep the stored status. Kinds without one leave the field alone for the schema to judge.
    """

    has_status = False

    def initial_status(self, obj: Obj) -> Obj:
        return {}

    def default(self, obj: Obj) -> None:
        """Upstream's defaulting, which it applies to every object it decodes."""

    def prepare_for_create(self, obj: Obj) -> None:
        self.default(obj)
        if self.has_status:
            obj["status"] = self.initial_status(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        if self.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
