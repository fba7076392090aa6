"""Test certificates made with the openssl CLI: one CA and leaf certificates it signs.

    ca = make_ca(dir)                       # dir/ca.pem, dir/ca.key
    leaf = make_cert(dir, "broker", ca)     # dir/broker.pem (chain), dir/broker.key
    leaf = make_cert(dir, "kadmit", ca, serial=7)

Leaf certificates carry IP:127.0.0.1 and DNS:localhost as subject alternative names,
so hostname verification works for clients connecting to 127.0.0.1.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Cert:
    cert: Path  # PEM certificate
    key: Path   # PEM private key (unencrypted, PKCS#8)
    subject: str
    serial: int


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_ca(directory: Path, name: str = "kadmit-test-ca") -> Cert:
    directory.mkdir(parents=True, exist_ok=True)
    key, cert = directory / "ca.key", directory / "ca.pem"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
             "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
    return Cert(cert, key, f"CN={name}", 0)


def make_cert(directory: Path, name: str, ca: Cert, serial: int = 1, cn: str | None = None,
              client: bool = False, san: str = "IP:127.0.0.1,DNS:localhost") -> Cert:
    """A leaf signed by ca, written to directory/name.pem and directory/name.key; san: its
    subject alternative names (e.g. "DNS:*.kafka.test" for a gateway's SNI names)."""
    cn = cn or name
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.pem"
    ext = directory / f"{name}.ext"
    usage = "clientAuth" if client else "serverAuth,clientAuth"
    ext.write_text(f"subjectAltName={san}\n"
                   f"extendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={cn}", cwd=directory)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca.cert), "-CAkey", str(ca.key),
             "-set_serial", str(serial), "-days", "2", "-extfile", str(ext), "-out", str(cert),
             cwd=directory)
    return Cert(cert, key, f"CN={cn}", serial)


def served_certificate(host: str, port: int, ca: Path) -> tuple[str, int]:
    """(subject, serial) of the certificate a TLS server presents, via openssl s_client."""
    p = subprocess.run(["openssl", "s_client", "-connect", f"{host}:{port}", "-CAfile", str(ca),
                        "-verify_return_error"],
                       input=b"", stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
    pem = p.stdout.decode(errors="replace")
    start = pem.find("-----BEGIN CERTIFICATE-----")
    end = pem.find("-----END CERTIFICATE-----")
    if start < 0 or end < 0:
        raise AssertionError(f"no certificate from {host}:{port}: {p.stderr.decode()[-800:]}")
    x = subprocess.run(["openssl", "x509", "-noout", "-subject", "-serial"],
                       input=pem[start:end + 25].encode(), stdout=subprocess.PIPE, check=True)
    subject = serial = None
    for line in x.stdout.decode().splitlines():
        if line.startswith("subject="):
            subject = line.split("=", 1)[1].strip().replace(" = ", "=")
        elif line.startswith("serial="):
            serial = int(line.split("=", 1)[1], 16)
    return subject or "", serial if serial is not None else -1
