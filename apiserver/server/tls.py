"""The hub's private PKI: a self-signed CA and the serving certificate it signs.

Owns the files under ``<data-dir>/pki`` (``ca.crt``, ``ca.key``, ``serving.crt``, ``serving.key``).
They are created on first start and reused afterwards, so kubeconfigs handed out earlier keep
trusting the hub. Only the serving certificate is ever replaced, when it no longer covers the
requested hosts, is close to expiry or was not signed by the current CA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubeclient.files import atomic_write

CA_VALIDITY = dt.timedelta(days=3650)
SERVING_VALIDITY = dt.timedelta(days=365)
# A serving certificate this close to expiry is renewed at the next start rather than left to lapse
# while the hub runs.
RENEW_BEFORE = dt.timedelta(days=30)
# Backdating tolerates clients whose clocks are slightly behind the hub's.
CLOCK_SKEW = dt.timedelta(minutes=5)

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SERVING_CERT = "serving.crt"
SERVING_KEY = "serving.key"

GeneralName = x509.DNSName | x509.IPAddress
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class Pki:
    """Where the hub's TLS material lives, plus the CA certificate for kubeconfigs."""

    ca_cert_pem: bytes
    cert_file: Path
    key_file: Path
    ca_file: Path


def ensure_pki(data_dir: Path, hosts: Sequence[str]) -> Pki:
    """Create or reuse the CA and a serving certificate valid for every host in ``hosts``.

    ``hosts`` may mix DNS names and IP addresses (IPv6 optionally in brackets). Wildcard bind
    addresses such as ``0.0.0.0`` are skipped: clients never dial them, so they never need to match.
    """
    pki_dir = Path(data_dir) / "pki"
    pki_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_file, ca_key_file = pki_dir / CA_CERT, pki_dir / CA_KEY
    cert_file, key_file = pki_dir / SERVING_CERT, pki_dir / SERVING_KEY
    now = dt.datetime.now(dt.UTC)

    ca = _load_pair(ca_file, ca_key_file)
    if ca is None or ca[0].not_valid_after_utc <= now:
        ca = _new_ca(now)
        _write_private(ca_key_file, _key_pem(ca[1]))
        _write_public(ca_file, ca[0].public_bytes(serialization.Encoding.PEM))
    else:
        _restrict(ca_key_file)
    ca_cert, ca_key = ca

    wanted = _general_names(hosts)
    serving = _load_pair(cert_file, key_file)
    if serving is None or not _serving_is_usable(serving[0], ca_cert, wanted, now):
        # Keep the names the old certificate had so clients that used an earlier listen address
        # keep working after the hub is started with a different one.
        previous = _san_names(serving[0]) if serving is not None else []
        names = _dedupe([*wanted, *previous])
        serving = _new_serving(ca_cert, ca_key, names, now)
        _write_private(key_file, _key_pem(serving[1]))
        _write_public(cert_file, serving[0].public_bytes(serialization.Encoding.PEM))
    else:
        _restrict(key_file)

    return Pki(ca_cert_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
               cert_file=cert_file, key_file=key_file, ca_file=ca_file)


def _general_names(hosts: Iterable[str]) -> list[GeneralName]:
    names: list[GeneralName] = []
    for raw in hosts:
        host = raw.strip()
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not host:
            continue
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            names.append(x509.DNSName(host.lower().rstrip(".")))
            continue
        if not ip.is_unspecified:
            names.append(x509.IPAddress(ip))
    return _dedupe(names)


def _dedupe(names: Iterable[GeneralName]) -> list[GeneralName]:
    seen: list[GeneralName] = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


def _san_names(cert: x509.Certificate) -> list[GeneralName]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [name for name in san if isinstance(name, x509.DNSName | x509.IPAddress)]


def _serving_is_usable(cert: x509.Certificate, ca_cert: x509.Certificate,
                       wanted: Sequence[GeneralName], now: dt.datetime) -> bool:
    if cert.not_valid_after_utc - RENEW_BEFORE <= now:
        return False
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    present = _san_names(cert)
    return all(name in present for name in wanted)


def _load_pair(cert_path: Path, key_path: Path) -> tuple[x509.Certificate, PrivateKey] | None:
    """The certificate and its key, or None when either is missing, unreadable or they do not match."""
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        return None
    # RSA is accepted too so that a CA supplied by an operator is reused rather than replaced.
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return None
    if key.public_key() != cert.public_key():
        return None
    return cert, key


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _new_ca(now: dt.datetime) -> tuple[x509.Certificate, PrivateKey]:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "spacehub"),
                      x509.NameAttribute(NameOID.COMMON_NAME, "spacehub-ca")])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(_serial())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _new_serving(ca_cert: x509.Certificate, ca_key: PrivateKey,
                 names: Sequence[GeneralName], now: dt.datetime
                 ) -> tuple[x509.Certificate, PrivateKey]:
    key = _new_key()
    dns = [n.value for n in names if isinstance(n, x509.DNSName)]
    common_name = dns[0] if dns else "spacehub"
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "spacehub"),
                                 x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(_serial())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(min(now + SERVING_VALIDITY, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=cert_sign,
                         crl_sign=cert_sign, encipher_only=False, decipher_only=False)


def _serial() -> int:
    # RFC 5280: positive, at most 20 octets; 159 random bits keeps the top bit clear.
    return secrets.randbits(159) | 1


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _restrict(path: Path) -> None:
    # A key copied in by hand may have a looser mode; the hub never serves with a readable key.
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)


def _write_private(path: Path, data: bytes) -> None:
    atomic_write(path, data, 0o600)


def _write_public(path: Path, data: bytes) -> None:
    atomic_write(path, data, 0o644)
