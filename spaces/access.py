"""Who may do what in a space: request attributes, decisions, and the authorizer that makes them.

The shape of kube-apiserver's ``authorizer.Attributes`` and ``Decision``; ``SelfSubjectAccessReview`` and
``SelfSubjectRulesReview`` are answered from the authorizer a server runs with. ``AdminsOnly`` is the
authorizer of a server whose only full identities are administrators (``system:masters``): they may do
anything, and every other identity is scoped by the server's authenticator before a space sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from spaces.identity import Identity

EVERYTHING = "*"


@dataclass(frozen=True)
class Attributes:
    """One request, as an authorizer sees it: a resource request or, when ``path`` is set, a non-resource one."""

    verb: str
    namespace: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @property
    def resource_request(self) -> bool:
        return not self.path


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    denied: bool = False  # an explicit deny, not just "no opinion"


@dataclass(frozen=True)
class ResourceRule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class NonResourceRule:
    verbs: tuple[str, ...]
    urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rules:
    """What an identity may do in one namespace of a space (``SelfSubjectRulesReview``)."""

    resource_rules: tuple[ResourceRule, ...] = ()
    non_resource_rules: tuple[NonResourceRule, ...] = ()
    incomplete: bool = False
    evaluation_error: str = ""


class Authorizer(Protocol):
    def authorize(self, space: str, identity: Identity, attributes: Attributes) -> Decision: ...

    def rules(self, space: str, identity: Identity, namespace: str) -> Rules: ...


class AdminsOnly:
    """Administrators may do anything, in every space; anyone else nothing."""

    def authorize(self, space: str, identity: Identity, attributes: Attributes) -> Decision:
        if identity.admin:
            return Decision(True)
        return Decision(False, f'no rule allows "{identity.name}" to {attributes.verb} in space "{space}"')

    def rules(self, space: str, identity: Identity, namespace: str) -> Rules:
        if not identity.admin:
            return Rules()
        return Rules((ResourceRule((EVERYTHING,), (EVERYTHING,), (EVERYTHING,)),),
                     (NonResourceRule((EVERYTHING,), (EVERYTHING,)),))
