"""The pure parts of kube spaces: the Space's provider fields, kubeconfigs the hub can and cannot use, and which
resources a kube space's mirror follows for its placements."""

from __future__ import annotations

import asyncio
import base64

import pytest
import yaml

from placement.mirror import wanted
from spaces.kind import SpaceStrategy
from spaces.providers.upstream import ProviderError, upstream_from_kubeconfig


def _space(**spec: object) -> dict[str, object]:
    return {"metadata": {"name": "k"}, "spec": spec}


REF = {"namespace": "default", "name": "creds", "key": "kubeconfig"}


def test_a_kube_space_needs_a_complete_secret_reference_and_a_builtin_one_none() -> None:
    strategy = SpaceStrategy()
    assert strategy.validate(_space(provider="kube", kubeconfigSecretRef=REF)) == []
    assert strategy.validate(_space()) == []
    assert [c.field for c in strategy.validate(_space(provider="kube"))] == ["spec.kubeconfigSecretRef"]
    partial = strategy.validate(_space(provider="kube", kubeconfigSecretRef={"name": "Bad_Name"}))
    assert [c.field for c in partial] == ["spec.kubeconfigSecretRef.namespace", "spec.kubeconfigSecretRef.name",
                                          "spec.kubeconfigSecretRef.key"]
    assert [c.type for c in strategy.validate(_space(kubeconfigSecretRef=REF))] == ["FieldValueForbidden"]
    assert [c.type for c in strategy.validate(_space(provider="other"))] == ["FieldValueNotSupported"]


def test_the_provider_of_a_space_never_changes() -> None:
    strategy = SpaceStrategy()
    kube = _space(provider="kube", kubeconfigSecretRef=REF)
    assert strategy.validate_update(kube, kube) == []
    changed = strategy.validate_update(_space(), kube)
    assert [(c.field, c.message) for c in changed] == [
        ("spec.provider", 'Invalid value: "builtin": field is immutable')]


def _kubeconfig(user: dict[str, object], cluster: dict[str, object] | None = None) -> bytes:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster or {"server": "https://api.example:6443"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}).encode()


def test_an_inline_token_becomes_the_bearer_credential_and_the_server_keeps_its_path() -> None:
    upstream = upstream_from_kubeconfig(_kubeconfig({"token": "t0k"}, {"server": "https://h:1/clusters/x",
                                                                       "insecure-skip-tls-verify": True}))
    try:
        assert upstream.proxy_client.headers["Authorization"] == "Bearer t0k"
        assert upstream.client.http.options([]) == {"headers": [("Authorization", "Bearer t0k")]}
        assert upstream.client.http.server == "https://h:1/clusters/x"
        assert upstream.base_path == "/clusters/x"
        assert upstream.url("api/v1/configmaps", b"watch=1") == "https://h:1/clusters/x/api/v1/configmaps?watch=1"
    finally:
        asyncio.run(upstream.close())


@pytest.mark.parametrize(("user", "cluster", "words"), [
    ({"exec": {"command": "aws"}}, None, "exec"),
    ({"tokenFile": "/var/run/token"}, None, "tokenFile"),
    ({}, {"server": "https://h", "certificate-authority": "/ca.crt"}, "certificate-authority"),
    ({}, {"server": "ftp://h"}, "no https:// or http:// server"),
    ({"client-certificate-data": base64.b64encode(b"nope").decode(), "client-key-data": "AA=="}, None,
     "client certificate and key"),
])
def test_kubeconfigs_the_hub_cannot_use_are_refused_naming_why(user: dict[str, object],
                                                               cluster: dict[str, object] | None, words: str) -> None:
    with pytest.raises(ProviderError) as refused:
        upstream_from_kubeconfig(_kubeconfig(user, cluster))
    assert refused.value.reason == "KubeconfigInvalid" and words in refused.value.message


def _placement(*tests: dict[str, object]) -> dict[str, object]:
    return {"spec": {"downsync": list(tests)}}


def test_the_mirror_follows_what_the_placements_name() -> None:
    want = wanted([_placement({"apiGroup": "", "resources": ["configmaps"]},
                              {"apiGroup": "apps", "resources": ["*"]},
                              {"resources": ["widgets"]})])
    assert want.names("", "configmaps") and not want.names("", "secrets")
    assert want.names("apps", "deployments")
    assert want.names("example.com", "widgets") and not want.names("example.com", "gadgets")
    assert want.every_group  # a plural in any group: every group's discovery is read
    # A test naming no resource names every resource of its group; one that discriminates nothing, nothing.
    assert wanted([_placement({"apiGroup": "batch", "namespaces": ["x"]})]).names("batch", "jobs")
    nothing = wanted([_placement({})])
    assert not nothing.names("", "configmaps") and not nothing.every_group
