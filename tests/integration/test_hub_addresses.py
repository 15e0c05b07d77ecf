"""Where clients reach the hub and what certificate it serves: ``--advertise-url``, ``--tls-san``, and the
operator's own certificate (``--tls-cert-file``/``--tls-key-file``/``--tls-ca-file``), reloaded when it changes.

A name such as ``hub.example`` does not resolve here, so clients connect to 127.0.0.1 and ask for that name in
the TLS handshake (kubectl's ``--tls-server-name``): the certificate is verified for the name, as a client that
resolved it would verify it.
"""

from __future__ import annotations

import base64
import datetime as dt
import socket
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.harness import BIN, KUBECTL, Hub, free_port, wait_for
from tests.processes import Program


def served_certificate(port: int, server_name: str, ca_pem: bytes) -> x509.Certificate:
    """The certificate the hub presents for ``server_name``, verified against ``ca_pem`` (raises if it is not)."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=server_name) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def kubeconfig_cluster(path: Path) -> dict[str, str]:
    config = yaml.safe_load(path.read_text())
    return config["clusters"][0]["cluster"]


def test_clients_are_given_the_advertised_url_and_the_certificate_covers_it(tmp_path: Path) -> None:
    port = free_port()
    advertised = f"https://hub.example:{port}"
    hub = Hub(tmp_path / "hub", port, tmp_path / "home",
              extra_args=["--advertise-url", advertised, "--tls-san", "alt.example", "--tls-san", "10.1.2.3"])
    hub.start()
    try:
        cluster = kubeconfig_cluster(hub.kubeconfig)
        assert cluster["server"] == f"{advertised}/clusters/root"
        ca_pem = base64.b64decode(cluster["certificate-authority-data"])
        names = served_certificate(port, "hub.example", ca_pem).extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value
        assert {"hub.example", "alt.example", "localhost"} <= set(names.get_values_for_type(x509.DNSName))
        served_certificate(port, "alt.example", ca_pem)
        with pytest.raises(ssl.SSLCertVerificationError):
            served_certificate(port, "other.example", ca_pem)  # the names are really checked

        with hub.client() as c:
            r = c.post("/placement/v1/clusters", json={"name": "edge1", "labels": {"env": "prod"}})
            assert r.status_code == 201, r.text
            assert r.json()["bootstrap"]["hub"] == advertised  # what the syncer (and its manifest) dials
            hub.create_space("team-a")
            space = wait_for(lambda: (c.get("/clusters/root/apis/spacehub.io/v1alpha1/spaces/team-a").json()
                                      .get("status") or {}).get("url"), timeout=20, message="the space's url")
            assert space == f"{advertised}/clusters/root:team-a"

        # Real kubectl, dialling the address but verifying the advertised name.
        ca_file = tmp_path / "ca.crt"
        ca_file.write_bytes(ca_pem)
        assert KUBECTL
        out = subprocess.run([KUBECTL, "--server", f"https://127.0.0.1:{port}/clusters/team-a",
                              "--tls-server-name", "hub.example", "--certificate-authority", str(ca_file),
                              "--token", hub.token, "--kubeconfig", "/dev/null", "get", "namespaces", "-o", "name"],
                             capture_output=True, text=True, timeout=60, env={"HOME": str(tmp_path)})
        assert out.returncode == 0, out.stderr
        assert "namespace/default" in out.stdout.split()
    finally:
        hub.stop()


def test_an_advertise_url_with_a_path_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run([str(BIN / "spacehub"), "hub", "serve", "--listen", f"127.0.0.1:{free_port()}",
                           "--data-dir", str(tmp_path / "hub"), "--advertise-url", "https://hub.example/prefix"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "--advertise-url must be https://HOST[:PORT]" in proc.stderr


# --- the operator's own certificate ----------------------------------------------------------------


class OwnCA:
    """A CA of the operator's (cert-manager's, say) and the serving certificates it issues."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "operator CA")])
        self.cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, cert_file: Path, key_file: Path) -> int:
        """A serving certificate for hub.example and 127.0.0.1, written over the files; its serial number."""
        import ipaddress

        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        serial = x509.random_serial_number()
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hub.example")]))
                .issuer_name(self.cert.subject).public_key(key.public_key()).serial_number(serial)
                .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName("hub.example"),
                                                            x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return serial


def test_the_operators_certificate_is_served_and_reloaded_when_its_files_change(tmp_path: Path) -> None:
    ca = OwnCA()
    cert_file, key_file, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    ca_file.write_bytes(ca.pem)
    first = ca.issue(cert_file, key_file)
    port, data_dir = free_port(), tmp_path / "hub"
    hub = Program(tmp_path / "hub.log")
    hub.start([str(BIN / "spacehub"), "hub", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir),
               "--advertise-url", f"https://hub.example:{port}", "--tls-cert-file", str(cert_file),
               "--tls-key-file", str(key_file), "--tls-ca-file", str(ca_file)])
    try:
        verify = ssl.create_default_context(cadata=ca.pem.decode())
        hub.wait_ready(lambda: httpx.get(f"https://127.0.0.1:{port}/readyz", verify=verify, timeout=2).status_code
                       == 200, timeout=60, retry_on=(httpx.HTTPError,))  # refused until it listens
        assert served_certificate(port, "hub.example", ca.pem).serial_number == first
        assert not (data_dir / "pki" / "serving.crt").exists()  # nothing generated in its place
        cluster = kubeconfig_cluster(data_dir / "admin.kubeconfig")
        assert base64.b64decode(cluster["certificate-authority-data"]) == ca.pem

        key_file.write_text("garbage")  # a rotation half-way: refused, the hub keeps serving the first pair
        wait_for(lambda: "not reloaded" in hub.log(), timeout=20,
                 message="the half-written pair refused")
        assert served_certificate(port, "hub.example", ca.pem).serial_number == first
        second = ca.issue(cert_file, key_file)
        wait_for(lambda: served_certificate(port, "hub.example", ca.pem).serial_number == second, timeout=20,
                 message="the renewed certificate served")
        assert "TLS certificate reloaded" in hub.log()
    finally:
        hub.stop()


def test_a_certificate_file_that_is_missing_stops_the_hub_with_its_name(tmp_path: Path) -> None:
    proc = subprocess.run([str(BIN / "spacehub"), "hub", "serve", "--listen", f"127.0.0.1:{free_port()}",
                           "--data-dir", str(tmp_path / "hub"), "--tls-cert-file", str(tmp_path / "tls.crt"),
                           "--tls-key-file", str(tmp_path / "tls.key")], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert f"{tmp_path / 'tls.crt'}: no such file" in proc.stderr
