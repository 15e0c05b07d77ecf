"""What the pod tunnel may carry (kubeclient/tunnel/rules.py), the same at the hub and at the syncer."""

from __future__ import annotations

import pytest

from apimachinery.errors import StatusError
from kubeclient.tunnel.rules import Allowed, check, check_subprotocols, forwarded

NS = "/api/v1/namespaces/shop"


@pytest.mark.parametrize(("method", "path", "query", "upgrade", "allowed"), [
    ("GET", "/api/v1/pods", "", False, Allowed("list", "", "")),
    ("GET", "/api/v1/pods", "watch=true&labelSelector=app%3Dweb&resourceVersion=10", False, Allowed("list", "", "")),
    ("GET", f"{NS}/pods", "fieldSelector=metadata.name%3Dweb-1&watch=1&allowWatchBookmarks=true", False,
     Allowed("list", "shop", "")),
    ("GET", f"{NS}/pods/web-1", "", False, Allowed("get", "shop", "web-1")),
    ("GET", f"{NS}/pods/web.v2-1", "resourceVersion=0", False, Allowed("get", "shop", "web.v2-1")),
    ("GET", f"{NS}/pods/web-1/log", "container=web&follow=true&tailLines=10&timestamps=true", False,
     Allowed("log", "shop", "web-1")),
    ("GET", f"{NS}/pods/web-1/exec", "command=sh&command=-c&command=ls%20%2F&stdin=true&stdout=true&tty=true", True,
     Allowed("exec", "shop", "web-1")),
    ("GET", f"{NS}/pods/web-1/attach", "container=web&stdin=true", True, Allowed("attach", "shop", "web-1")),
    ("GET", f"{NS}/pods/web-1/portforward", "ports=8080&ports=9090", True, Allowed("portforward", "shop", "web-1")),
    ("DELETE", f"{NS}/pods/web-1", "gracePeriodSeconds=0", False, Allowed("delete", "shop", "web-1")),
    ("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "labelSelector=app%3Dweb", False,
     Allowed("metrics", "shop", "")),
])
def test_pod_reads_and_the_debugging_subresources_are_allowed(method: str, path: str, query: str, upgrade: bool,
                                                               allowed: Allowed) -> None:
    assert check(method, path, query, upgrade=upgrade) == allowed


@pytest.mark.parametrize(("method", "path", "query", "upgrade"), [
    ("GET", f"{NS}/secrets/db", "", False),  # other kinds
    ("GET", "/api/v1/secrets", "", False),
    ("GET", "/apis/apps/v1/namespaces/shop/deployments", "", False),
    ("GET", "/api/v1/nodes/n1/proxy", "", False),
    ("GET", f"{NS}/pods/web-1/proxy", "", False),  # other subresources
    ("GET", f"{NS}/pods/web-1/status", "", False),
    ("GET", f"{NS}/pods/web-1/ephemeralcontainers", "", False),
    ("POST", f"{NS}/pods", "", False),  # other verbs
    ("PUT", f"{NS}/pods/web-1", "", False),
    ("PATCH", f"{NS}/pods/web-1", "", False),
    ("DELETE", f"{NS}/pods", "", False),  # deletecollection
    ("DELETE", f"{NS}/pods/web-1/log", "", False),
    ("get", f"{NS}/pods/web-1", "", False),
    ("POST", f"{NS}/pods/web-1/exec", "command=sh", False),  # exec without a WebSocket (SPDY)
    ("GET", f"{NS}/pods/web-1/exec", "command=sh", False),
    ("GET", f"{NS}/pods/web-1/log", "", True),  # a WebSocket for anything else
    ("GET", f"{NS}/pods/web-1", "", True),
    ("GET", f"{NS}/pods/../secrets/db", "", False),  # path tricks
    ("GET", f"{NS}/pods/web-1/../../secrets/db", "", False),
    ("GET", f"{NS}/pods/web-1%2F..%2F..%2Fsecrets", "", False),
    ("GET", f"{NS}/pods/%77eb-1", "", False),
    ("GET", f"{NS}//pods/web-1", "", False),
    ("GET", f"{NS}/pods/web-1/", "", False),
    ("GET", f"{NS}/pods/./web-1", "", False),
    ("GET", f"{NS}/pods/Web-1", "", False),
    ("GET", f"{NS}/pods/web-1/log;x", "", False),
    ("GET", f"{NS}/pods/web-1\\..\\secrets", "", False),
    ("GET", "/api/v1/namespaces/-bad/pods", "", False),
    ("GET", f"/api/v1/namespaces/{'a' * 64}/pods", "", False),
    ("GET", f"{NS}/pods/{'a' * 63}.{'b' * 63}.{'c' * 63}.{'d' * 63}", "", False),  # 255 characters
    ("GET", f"/prefix{NS}/pods", "", False),
    ("GET", f"{NS}/pods/web-1/log", "insecureSkipTLSVerifyBackend=true", False),  # widening parameters
    ("GET", f"{NS}/pods/web-1", "watch=true", False),
    ("GET", f"{NS}/pods", "dryRun=All", False),
    ("GET", f"{NS}/pods/web-1/log", "container=a&container=b", False),  # read differently by two parsers
    ("GET", f"{NS}/pods", "limit=1;watch=true", False),
    ("GET", f"{NS}/pods", "watch", False),
    ("GET", f"{NS}/pods", "watch=true#x", False),
    ("GET", f"{NS}/pods", "labelSelector=a b", False),
    ("GET", f"{NS}/pods", "&".join(["limit=1"] * 100), False),
    ("GET", "/apis/metrics.k8s.io/v1beta1/nodes", "", False),  # metrics: only a namespace's pods, listed
    ("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web-1", "", False),
    ("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "watch=true", False),
    ("DELETE", "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods", "", False),
    ("GET", "/apis/metricsXk8s.io/v1beta1/namespaces/shop/pods", "", False),
])
def test_everything_else_is_refused_with_403(method: str, path: str, query: str, upgrade: bool) -> None:
    with pytest.raises(StatusError) as refused:
        check(method, path, query, upgrade=upgrade)
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    assert "the tunnel to the cluster does not carry" in refused.value.message


def test_subprotocols_must_be_a_short_list_of_names() -> None:
    offered = ["v5.channel.k8s.io", "v4.channel.k8s.io", "SPDY/3.1+portforward.k8s.io"]
    assert check_subprotocols(offered) == offered
    for bad in ("v5.channel.k8s.io", ["a, b"], ["x\r\nHost: evil"], [""], ["v"] * 9, [5]):
        with pytest.raises(StatusError):
            check_subprotocols(bad)


def test_only_harmless_headers_are_forwarded() -> None:
    headers = [("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"), ("Authorization", "Bearer hub-token"),
               ("Impersonate-User", "admin"), ("Cookie", "x"), ("User-Agent", "kubectl/v1.34"),
               ("Content-Type", "application/json\r\nX-Injected: 1")]
    assert forwarded(headers, frozenset({"accept", "content-type", "user-agent"})) == [
        ("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"), ("User-Agent", "kubectl/v1.34")]
