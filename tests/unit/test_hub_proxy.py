"""Which proxy a syncer uses for its hub: the environment's, read once (tests/integration/test_syncer_resilience.py
runs the whole flow through tinyproxy)."""

from __future__ import annotations

import pytest

from kubeclient.proxyenv import proxy_for

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
                   "NO_PROXY", "no_proxy")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_no_proxy_variables_mean_a_direct_connection() -> None:
    assert proxy_for("https://hub.example.com:6443") is None


def test_https_proxy_is_used_unless_no_proxy_names_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert proxy_for("https://hub.example.com:6443") == "http://proxy.corp:3128"
    monkeypatch.setenv("NO_PROXY", "localhost,.example.com")
    assert proxy_for("https://hub.example.com:6443") is None
    assert proxy_for("https://hub.elsewhere.org") == "http://proxy.corp:3128"


def test_all_proxy_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "http://proxy.corp:3128")
    assert proxy_for("https://hub.example.com") == "http://proxy.corp:3128"


def test_no_proxy_may_name_a_host_and_port_or_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1:7443,https://10.0.0.1:6443")
    assert proxy_for("https://127.0.0.1:7443/clusters/wec1") is None
    assert proxy_for("https://127.0.0.1:6443") == "http://proxy.corp:3128"
    assert proxy_for("https://10.0.0.1:6443") is None
    assert proxy_for("https://10.0.0.1:443") == "http://proxy.corp:3128"
