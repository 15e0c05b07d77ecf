"""The hub's PKI, kubeconfig handling, and the client's trust of that PKI over a real TLS socket."""

from __future__ import annotations

import base64
import http.server
import ipaddress
import ssl
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from cryptography import x509
from cryptography.x509 import verification

from apiserver.server.tls import ensure_pki
from kubeclient import kubeconfig
from kubeclient.kubeconfig import KubeconfigError
from spaces.client import ConnectionFailed, HubClient, HubError

HOSTS = ["127.0.0.1", "localhost", "::1"]


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _sans(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return (san.get_values_for_type(x509.DNSName),
            [str(ip) for ip in san.get_values_for_type(x509.IPAddress)])


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- PKI -----------------------------------------------------------------------------------------

def test_pki_files_and_modes(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path, HOSTS)
    pki_dir = tmp_path / "pki"
    assert {p.name for p in pki_dir.iterdir()} == {"ca.crt", "ca.key", "serving.crt", "serving.key"}
    assert pki.ca_file == pki_dir / "ca.crt"
    assert pki.cert_file == pki_dir / "serving.crt"
    assert pki.key_file == pki_dir / "serving.key"
    assert pki.ca_cert_pem == pki.ca_file.read_bytes()
    assert _mode(pki_dir / "ca.key") == 0o600
    assert _mode(pki.key_file) == 0o600


def test_serving_cert_chain_verifies_for_every_host(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path, [*HOSTS, "hub.example.com"])
    ca, leaf = _cert(pki.ca_file), _cert(pki.cert_file)
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    # The strict (web PKI style) verifier checks extensions Go and OpenSSL care about as well.
    store = verification.Store([ca])
    for subject in [x509.DNSName("localhost"), x509.DNSName("hub.example.com"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1"))]:
        verifier = verification.PolicyBuilder().store(store).build_server_verifier(subject)
        chain = verifier.verify(leaf, [])
        assert chain[-1] == ca


def test_sans_split_into_dns_and_ip(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path, ["127.0.0.1", "Localhost", "[::1]", "0.0.0.0", "hub.example.com"])
    dns, ips = _sans(_cert(pki.cert_file))
    assert sorted(dns) == ["hub.example.com", "localhost"]
    # The wildcard bind address is never what a client dials, so it is left out.
    assert sorted(ips) == ["127.0.0.1", "::1"]


def test_second_call_reuses_everything(tmp_path: Path) -> None:
    ensure_pki(tmp_path, HOSTS)
    before = {p.name: p.read_bytes() for p in (tmp_path / "pki").iterdir()}
    again = ensure_pki(tmp_path, ["localhost"])  # a subset of what the certificate already covers
    after = {p.name: p.read_bytes() for p in (tmp_path / "pki").iterdir()}
    assert after == before
    assert again.ca_cert_pem == before["ca.crt"]


def test_new_host_regenerates_only_the_serving_cert(tmp_path: Path) -> None:
    first = ensure_pki(tmp_path, HOSTS)
    ca_key = (tmp_path / "pki" / "ca.key").read_bytes()
    old_leaf = first.cert_file.read_bytes()
    second = ensure_pki(tmp_path, [*HOSTS, "10.1.2.3", "hub.internal"])
    assert second.ca_cert_pem == first.ca_cert_pem
    assert (tmp_path / "pki" / "ca.key").read_bytes() == ca_key
    assert second.cert_file.read_bytes() != old_leaf
    dns, ips = _sans(_cert(second.cert_file))
    assert set(dns) == {"localhost", "hub.internal"}
    assert set(ips) == {"127.0.0.1", "::1", "10.1.2.3"}
    _cert(second.cert_file).verify_directly_issued_by(_cert(second.ca_file))
    assert _mode(second.key_file) == 0o600


def test_broken_serving_key_is_replaced(tmp_path: Path) -> None:
    first = ensure_pki(tmp_path, HOSTS)
    first.key_file.write_bytes(b"not a key")
    second = ensure_pki(tmp_path, HOSTS)
    assert second.ca_cert_pem == first.ca_cert_pem
    _cert(second.cert_file).verify_directly_issued_by(_cert(second.ca_file))
    ssl.create_default_context().load_cert_chain(second.cert_file, second.key_file)


def test_new_ca_forces_new_serving_cert(tmp_path: Path) -> None:
    first = ensure_pki(tmp_path, HOSTS)
    (tmp_path / "pki" / "ca.key").unlink()
    second = ensure_pki(tmp_path, HOSTS)
    assert second.ca_cert_pem != first.ca_cert_pem
    _cert(second.cert_file).verify_directly_issued_by(_cert(second.ca_file))


# --- kubeconfig ----------------------------------------------------------------------------------

def test_build_kubeconfig_shape() -> None:
    cfg = kubeconfig.build_kubeconfig("https://h:6443/clusters/root", b"PEM", "tok", "hub")
    assert cfg["current-context"] == "hub"
    assert cfg["clusters"] == [{"name": "hub", "cluster": {
        "server": "https://h:6443/clusters/root",
        "certificate-authority-data": base64.b64encode(b"PEM").decode()}}]
    assert cfg["users"] == [{"name": "hub", "user": {"token": "tok"}}]
    assert cfg["contexts"] == [{"name": "hub", "context": {"cluster": "hub", "user": "hub"}}]
    assert kubeconfig.current_server(cfg) == "https://h:6443/clusters/root"
    bare = kubeconfig.build_kubeconfig("http://h", None, "", "x", insecure_skip_tls_verify=True)
    assert bare["clusters"][0]["cluster"] == {"server": "http://h", "insecure-skip-tls-verify": True}
    assert bare["users"][0]["user"] == {}


def test_save_is_atomic_0600_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config"
    cfg = kubeconfig.build_kubeconfig("https://h/clusters/root", b"PEM", "tok", "hub")
    kubeconfig.save(path, cfg)
    assert _mode(path) == 0o600
    assert kubeconfig.load(path) == cfg
    assert [p.name for p in path.parent.iterdir()] == ["config"]


def test_save_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    link = tmp_path / "link.yaml"
    kubeconfig.save(real, {"a": 1})
    link.symlink_to(real)
    kubeconfig.save(link, {"a": 2})
    assert link.is_symlink()
    assert kubeconfig.load(real) == {"a": 2}


def test_load_errors_are_kubeconfig_errors(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="does not exist"):
        kubeconfig.load(tmp_path / "missing")
    (tmp_path / "bad").write_text("- just\n- a list\n")
    with pytest.raises(KubeconfigError, match="not a mapping"):
        kubeconfig.load(tmp_path / "bad")
    with pytest.raises(KubeconfigError, match="current-context"):
        kubeconfig.current_server({})
    with pytest.raises(KubeconfigError, match='context "x" does not exist'):
        kubeconfig.current_server({"current-context": "x"})


def test_resolve_path_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert kubeconfig.resolve_path(None) == Path(".spacehub/admin.kubeconfig")
    assert kubeconfig.resolve_path(None, default=tmp_path / "d") == tmp_path / "d"
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path}/a:{tmp_path}/b")
    assert kubeconfig.resolve_path(None) == tmp_path / "a"
    assert kubeconfig.resolve_path("explicit") == Path("explicit")


@pytest.mark.parametrize(("url", "expected"), [
    ("https://h:6443/clusters/root", ("https://h:6443", "root")),
    ("https://h:6443/clusters/team-a/", ("https://h:6443", "team-a")),
    ("https://h:6443", ("https://h:6443", None)),
    ("https://h:6443/", ("https://h:6443", None)),
    ("https://h/prefix/clusters/a", ("https://h/prefix", "a")),
    ("https://[::1]:6443/clusters/a", ("https://[::1]:6443", "a")),
    ("https://h/clusters/", ("https://h/clusters", None)),
])
def test_split_server(url: str, expected: tuple[str, str | None]) -> None:
    assert kubeconfig.split_server(url) == expected


def test_with_space() -> None:
    assert kubeconfig.with_space("https://h:6443/clusters/root", "a") == "https://h:6443/clusters/a"
    assert kubeconfig.with_space("https://h:6443", "a") == "https://h:6443/clusters/a"
    assert kubeconfig.with_space("https://h/p/clusters/x/", "root") == "https://h/p/clusters/root"


def test_access_resolves_files_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_bytes(b"CA")
    (tmp_path / "token").write_text("secret\n")
    cfg = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://h/clusters/a",
                                               "certificate-authority": "ca.pem"}}],
        "users": [{"name": "u", "user": {"tokenFile": "token"}}],
    }
    acc = kubeconfig.access(cfg, tmp_path)
    assert acc == kubeconfig.ClusterAccess("https://h/clusters/a", b"CA", "secret", False)


def test_ensure_admin_creates_and_reuses(tmp_path: Path) -> None:
    creds = kubeconfig.ensure_admin(tmp_path, "https://127.0.0.1:6443/clusters/root", b"CA")
    assert _mode(creds.token_file) == 0o600
    assert _mode(creds.kubeconfig_file) == 0o600
    acc = kubeconfig.access(kubeconfig.load(creds.kubeconfig_file), tmp_path)
    assert acc.token == creds.token and acc.ca_pem == b"CA"
    assert acc.server == "https://127.0.0.1:6443/clusters/root"

    # A space chosen in the admin kubeconfig survives a restart on the same address.
    cfg = kubeconfig.load(creds.kubeconfig_file)
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:6443/clusters/team"
    kubeconfig.save(creds.kubeconfig_file, cfg)
    again = kubeconfig.ensure_admin(tmp_path, "https://127.0.0.1:6443/clusters/root", b"CA")
    assert again.token == creds.token
    assert kubeconfig.current_server(kubeconfig.load(creds.kubeconfig_file)).endswith("/clusters/team")

    # A new listen address rewrites it, still with the same token.
    moved = kubeconfig.ensure_admin(tmp_path, "https://127.0.0.1:7443/clusters/root", b"CA")
    assert moved.token == creds.token
    assert kubeconfig.current_server(kubeconfig.load(creds.kubeconfig_file)) == \
        "https://127.0.0.1:7443/clusters/root"


# --- the client against a real TLS socket signed by the hub CA -----------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.headers.get("Authorization") != "Bearer tok":
            self._send(401, {"kind": "Status", "code": 401, "reason": "Unauthorized",
                             "message": "Unauthorized"})
        elif self.path.endswith("/spaces/a"):
            self._send(200, {"kind": "Space", "metadata": {"name": "a"}, "status": {"phase": "Ready"}})
        else:
            self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound",
                             "message": 'spaces.spacehub.io "b" not found'})

    def _send(self, code: int, body: dict[str, object]) -> None:
        data = orjson.dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def tls_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, bytes]]:
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    pki = ensure_pki(tmp_path, HOSTS)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{server.server_address[1]}", pki.ca_cert_pem
    finally:
        server.shutdown()
        server.server_close()


def test_client_trusts_the_hub_ca_and_maps_status(tls_server: tuple[str, bytes]) -> None:
    url, ca = tls_server
    cfg = kubeconfig.build_kubeconfig(f"{url}/clusters/a", ca, "tok", "hub")
    with HubClient.from_kubeconfig(cfg) as client:
        assert client.base_url == url
        assert client.get("/clusters/root/apis/spacehub.io/v1alpha1/spaces/a")["metadata"]["name"] == "a"
        with pytest.raises(HubError) as err:
            client.get("/clusters/root/apis/spacehub.io/v1alpha1/spaces/b")
    assert (err.value.code, err.value.reason) == (404, "NotFound")
    assert err.value.render() == 'Error from server (NotFound): spaces.spacehub.io "b" not found'


def test_client_rejects_a_server_not_signed_by_the_ca(tls_server: tuple[str, bytes], tmp_path: Path) -> None:
    url, _ = tls_server
    other_ca = ensure_pki(tmp_path / "other", HOSTS).ca_cert_pem
    with HubClient(url, ca_pem=other_ca, token="tok") as client, pytest.raises(ConnectionFailed) as err:
        client.get("/clusters/root/api")
    assert url in str(err.value)
    assert "certificate" in str(err.value)


def test_client_names_the_server_it_cannot_reach() -> None:
    with HubClient("https://127.0.0.1:1", token="t", timeout=2) as client, \
            pytest.raises(ConnectionFailed, match=r"127\.0\.0\.1:1"):
        client.get("/clusters/root/api")
