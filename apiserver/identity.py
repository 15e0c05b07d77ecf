"""Who sent a request: the identity a server's authenticator establishes (kube's ``user.Info``).

Authentication middleware puts it into the ASGI scope under ``SCOPE_KEY``; handlers that must check
who is calling read it with ``of_request``. Imports nothing of spacehub's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ADMINS = "system:masters"  # kube's group of identities that every authorizer lets do anything
AUTHENTICATED = "system:authenticated"  # every identity a credential established is in it, as in kube
SCOPE_KEY = "spacehub.identity"


@dataclass(frozen=True)
class Identity:
    name: str
    groups: tuple[str, ...] = ()
    # The one space this identity belongs to and may act in (a ServiceAccount's); None: any space RBAC allows.
    space: str | None = None

    @property
    def admin(self) -> bool:
        return ADMINS in self.groups


def of_request(scope: Mapping[str, Any]) -> Identity | None:
    identity = scope.get(SCOPE_KEY)
    return identity if isinstance(identity, Identity) else None
