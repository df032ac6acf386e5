"""Certificates and keys for a deployed federation, made with ``cryptography`` (no openssl scripts).

- ``ca.crt`` / ``ca.key``: the federation's own certificate authority (EC P-384, ``CA:TRUE``, 10 years by default).
  Keep ``ca.key`` offline at the coordinating institution; give ``ca.crt`` to every SuperNode and ``flwr`` user.
- ``server.pem`` / ``server.key``: the SuperLink's TLS certificate (EC P-384, signed by the CA, subject alternative
  names for each host name and IP the SuperNodes dial, ``serverAuth``).
- ``supernodes/<name>`` (OpenSSH private key) and ``supernodes/<name>.pub`` (OpenSSH public key), EC P-384: one pair
  per institution, made by the institution itself (only the ``.pub`` leaves it) for SuperNode authentication
  (``flower-supernode --auth-supernode-private-key``; the SuperLink operator runs ``flwr supernode register
  <name>.pub``).

Private keys are written with mode 0600.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from pathlib import Path

from sectorflow import ConfigError


def _write(path: Path, data: bytes, private: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def _san(hosts: list[str]) -> list[object]:
    from cryptography import x509

    names: list[object] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def make_ca(out: Path, *, name: str = "sectorflow federation CA", days: int = 3650) -> tuple[Path, Path]:
    """Write ``ca.crt`` and ``ca.key`` (PEM) to ``out``; returns their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP384R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA384()))
    crt = _write(out / "ca.crt", cert.public_bytes(serialization.Encoding.PEM))
    pem = _write(out / "ca.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()), private=True)
    return crt, pem


def make_server_cert(out: Path, hosts: list[str], *, ca_dir: Path | None = None, days: int = 825) -> tuple[Path, Path]:
    """Write ``server.pem`` and ``server.key`` signed by the CA in ``ca_dir`` (default ``out``) for ``hosts``.

    Raises:
        ConfigError: no host given, or the CA files are missing.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not hosts:
        raise ConfigError("Give at least one host name or IP address the SuperNodes use to reach the SuperLink.")
    ca_dir = ca_dir or out
    try:
        ca_cert = x509.load_pem_x509_certificate((ca_dir / "ca.crt").read_bytes())
        ca_key = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), password=None)
    except FileNotFoundError as exc:
        raise ConfigError(f"CA file {exc.filename} not found: run `sectorflow federate certs` first.") from None
    key = ec.generate_private_key(ec.SECP384R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(_san(hosts)), critical=False)  # type: ignore[arg-type]
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),  # type: ignore
                           critical=False)
            .sign(ca_key, hashes.SHA384()))  # type: ignore[arg-type]
    crt = _write(out / "server.pem", cert.public_bytes(serialization.Encoding.PEM))
    pem = _write(out / "server.key", key.private_bytes(serialization.Encoding.PEM,
                                                       serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()), private=True)
    return crt, pem


def make_supernode_keys(out: Path, name: str) -> tuple[Path, Path]:
    """Write ``<name>`` (OpenSSH private key) and ``<name>.pub`` (OpenSSH public key), EC P-384, to ``out``.

    Raises:
        ConfigError: ``name`` is not a plain file name.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    if not name or Path(name).name != name or name.startswith("."):
        raise ConfigError(f"SuperNode key name {name!r} must be a plain file name (e.g. bank_a).")
    key = ec.generate_private_key(ec.SECP384R1())
    private = _write(out / name, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                                   serialization.NoEncryption()), private=True)
    public = _write(out / f"{name}.pub", key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH) + f" {name}\n".encode())
    return private, public


def make_all(out: Path, hosts: list[str], supernodes: list[str]) -> dict[str, list[str]]:
    """CA, SuperLink certificate for ``hosts`` and one key pair per SuperNode name under ``out/supernodes``;
    returns the written paths by kind."""
    ca = make_ca(out)
    server = make_server_cert(out, hosts)
    keys = [p for name in supernodes for p in make_supernode_keys(out / "supernodes", name)]
    return {"ca": [str(p) for p in ca], "server": [str(p) for p in server], "supernodes": [str(p) for p in keys]}
