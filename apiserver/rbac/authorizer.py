"""The RBAC authorizer: a request is allowed when a rule bound to its identity in the space allows it.

Identities in a privileged group (``system:masters``, and whatever the server's authenticator already scopes
by itself, such as the hub's syncers) are allowed everything, as kube's authorizer chain lets
``system:masters`` through before RBAC. Nothing else is allowed unless a binding says so, and an identity that
belongs to one space (a ServiceAccount's) nothing anywhere else.
"""

from __future__ import annotations

from apiserver.access import EVERYTHING, Attributes, Decision, NonResourceRule, ResourceRule, Rules
from apiserver.identity import ADMINS, Identity
from apiserver.rbac.policy import PolicyIndex, flatten
from apiserver.rbac.rules import allows


class RBACAuthorizer:
    def __init__(self, policy: PolicyIndex, privileged_groups: tuple[str, ...] = (ADMINS,)) -> None:
        self.policy = policy
        self.privileged_groups = privileged_groups

    def privileged(self, who: Identity) -> bool:
        return any(group in who.groups for group in self.privileged_groups)

    def authorize(self, space: str, identity: Identity, attributes: Attributes) -> Decision:
        if identity.space is not None and identity.space != space:  # a ServiceAccount acts in its own space only
            return Decision(False)
        if self.privileged(identity):
            return Decision(True)
        for grant in self.policy.grants(space, identity, attributes.namespace):
            if any(allows(rule, attributes) for rule in grant.rules):
                return Decision(True, f"RBAC: allowed by {grant.via}")
        return Decision(False)

    def rules(self, space: str, identity: Identity, namespace: str) -> Rules:
        if identity.space is not None and identity.space != space:
            return Rules()
        if self.privileged(identity):
            return Rules((ResourceRule((EVERYTHING,), (EVERYTHING,), (EVERYTHING,)),),
                         (NonResourceRule((EVERYTHING,), (EVERYTHING,)),))
        resource, non_resource = flatten(self.policy.grants(space, identity, namespace))
        return Rules(resource, non_resource)
