"""Who may do what in a space: request attributes, decisions, and the authorizer that makes them.

The shape of kube-apiserver's ``authorizer.Attributes`` and ``Decision``; ``SelfSubjectAccessReview`` and
``SelfSubjectRulesReview`` are answered from the authorizer a server runs with. ``AdminsOnly`` is the
authorizer of a server whose only full identities are administrators (``system:masters``): they may do
anything, and every other identity is scoped by the server's authenticator before a space sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from apimachinery.errors import StatusError
from apiserver.identity import Identity
from apiserver.spacepaths import ROOT, base_name, full_path, parent_id

EVERYTHING = "*"
# Where requests that are not about one space (``/metrics``, ``/syncer/v1``) are authorized.
PARENT_SPACE = ROOT
SPACES_GROUP = "spacehub.io"


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


def entering(name: str) -> Attributes:
    """What entering the space of Space object ``name`` asks of the space holding that object (its parent), as
    kcp asks ``access`` on ``workspaces/content``."""
    return Attributes(verb="access", group=SPACES_GROUP, resource="spaces", subresource="content", name=name)


def require(authorizer: Authorizer, space: str, who: Identity, attributes: Attributes) -> None:
    """Raise kube's 403 unless ``who`` may enter ``space`` (an id, ``apiserver.spacepaths``) and do what
    ``attributes`` describe there.

    An identity that belongs to one space (``Identity.space``) is refused everywhere else by the authorizer.
    Entering asks the parent only, not every ancestor: access to ``root:org:team`` can be given without access
    to ``root:org`` (and only someone who may enter ``root:org`` could grant it there)."""
    parent = parent_id(space)
    # A space's own ServiceAccount enters it without a grant in the parent: it belongs to the space.
    if parent is not None and who.space != space and \
            not authorizer.authorize(parent, who, entering(base_name(space))).allowed:
        raise _forbidden(who, entering(base_name(space)),
                         f'entering space "{full_path(space)}" needs "access" on spaces/content '
                         f'"{base_name(space)}" in space "{full_path(parent)}"')
    if not authorizer.authorize(space, who, attributes).allowed:
        raise _forbidden(who, attributes)


def _forbidden(who: Identity, attrs: Attributes, reason: str = "") -> StatusError:
    """kube-apiserver's ``responsewriters.Forbidden``: the message names the user, verb and resource."""
    if not attrs.resource_request:
        message = f'forbidden: User "{who.name}" cannot {attrs.verb} path "{attrs.path}"'
        return StatusError(403, "Forbidden", message + (f": {reason}" if reason else ""))
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    message = (f'{subject} is forbidden: User "{who.name}" cannot {attrs.verb} resource "{resource}" in API group '
               f'"{attrs.group}" {where}')
    return StatusError(403, "Forbidden", message + (f": {reason}" if reason else ""), name=attrs.name,
                       group=attrs.group, kind=attrs.resource)
