"""spacehub.io/v1alpha1 Spaces, and the reserved ``root`` space."""

from __future__ import annotations

from spaces.builtin.strategies._helpers import Obj, _name
from spaces.builtin.strategies.base import BuiltinStrategy
from spaces.errors import Cause
from spaces.names import forbidden

ROOT_SPACE = "root"


class SpaceStrategy(BuiltinStrategy):
    """Spaces are made and removed by users, except ``root``, which the hub itself owns."""

    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Pending"}

    def validate(self, obj: Obj) -> list[Cause]:
        if _name(obj) == ROOT_SPACE:
            return [forbidden("metadata.name", "the root space is created by the hub and cannot be created")]
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # Updating root (labels, annotations) is fine; only its creation and deletion are reserved.
        return []

    def validate_delete(self, obj: Obj) -> list[Cause]:
        """Causes that forbid deleting ``obj``; the handlers call it before a delete of a Space."""
        if _name(obj) == ROOT_SPACE:
            return [forbidden("metadata.name", "the root space cannot be deleted")]
        return []
