"""spacehub.io/v1alpha1 Spaces, and the reserved ``root`` space.

A Space's ``spec.provider`` says who serves its API: ``builtin`` (the default: the hub's own store) or ``kube``
(a Kubernetes API server the hub reaches through the kubeconfig in ``spec.kubeconfigSecretRef``, a Secret in
the parent space; ``spaces.providers``). The provider is fixed at creation.
"""

from __future__ import annotations

from typing import Any

from spaces.builtin.strategies._helpers import IMMUTABLE, Obj, _name
from spaces.builtin.strategies.base import BuiltinStrategy
from spaces.errors import Cause
from spaces.names import forbidden, invalid, is_dns1123_label, is_dns1123_subdomain, not_supported, required

ROOT_SPACE = "root"
BUILTIN, KUBE = "builtin", "kube"
PROVIDERS = (BUILTIN, KUBE)
SECRET_REF = "kubeconfigSecretRef"


def provider_of(obj: Obj) -> str:
    """The space's provider; ``builtin`` when the spec does not name one."""
    spec = obj.get("spec")
    provider = spec.get("provider") if isinstance(spec, dict) else None
    return provider if isinstance(provider, str) and provider else BUILTIN


def _ref_causes(ref: Any) -> list[Cause]:
    path = f"spec.{SECRET_REF}"
    if not isinstance(ref, dict):
        return [required(path, "a kube space reads its kubeconfig from a Secret in the parent space")]
    causes = []
    for field, check in (("namespace", is_dns1123_label), ("name", is_dns1123_subdomain)):
        value = ref.get(field)
        if not isinstance(value, str) or not value:
            causes.append(required(f"{path}.{field}"))
        else:
            causes.extend(invalid(f"{path}.{field}", value, msg) for msg in check(value))
    key = ref.get("key")
    if not isinstance(key, str) or not key:
        causes.append(required(f"{path}.key", "the Secret's data key holding the kubeconfig"))
    return causes


def provider_causes(obj: Obj) -> list[Cause]:
    """What is wrong with a Space's provider settings: a known provider, and the Secret reference exactly
    when the provider is ``kube``."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    provider = spec.get("provider")
    if provider is not None and provider not in PROVIDERS:
        return [not_supported("spec.provider", provider, PROVIDERS)]
    if provider_of(obj) == KUBE:
        return _ref_causes(spec.get(SECRET_REF))
    if spec.get(SECRET_REF) is not None:
        return [forbidden(f"spec.{SECRET_REF}", 'may only be set when spec.provider is "kube"')]
    return []


class SpaceStrategy(BuiltinStrategy):
    """Spaces are made and removed by users, except ``root``, which the hub itself owns."""

    has_status = True

    def initial_status(self, obj: Obj) -> Obj:
        return {"phase": "Pending"}

    def validate(self, obj: Obj) -> list[Cause]:
        if _name(obj) == ROOT_SPACE:
            return [forbidden("metadata.name", "the root space is created by the hub and cannot be created")]
        return provider_causes(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        # Updating root (labels, annotations) is fine; only its creation and deletion are reserved.
        # The provider is fixed: the space's objects live with it, and nothing moves them to another.
        if provider_of(new) != provider_of(old):
            return [invalid("spec.provider", provider_of(new), IMMUTABLE)]
        return provider_causes(new)

    def validate_delete(self, obj: Obj) -> list[Cause]:
        """Causes that forbid deleting ``obj``; the handlers call it before a delete of a Space."""
        if _name(obj) == ROOT_SPACE:
            return [forbidden("metadata.name", "the root space cannot be deleted")]
        return []
