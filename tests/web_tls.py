"""A certificate authority of a test's own and a server certificate it signs for a name,
so that a real TLS server (nginx) can be verified against that name (Debian's ``openssl``
command, which ``make test`` installs with nginx)."""

from __future__ import annotations

import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

OPENSSL = "/usr/bin/openssl"
_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass
class Certificates:
    ca: Path
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        """A client context that trusts this CA alone."""
        return ssl.create_default_context(cafile=str(self.ca))


def _openssl(*args: str | Path, cwd: Path) -> None:
    if not Path(OPENSSL).exists():
        raise AssertionError(
            f"{OPENSSL} missing: `make test` installs it (apt-get install openssl)"
        )
    subprocess.run([OPENSSL, *map(str, args)], cwd=cwd, check=True, capture_output=True)


def issue(folder: Path, dns_name: str) -> Certificates:
    """A CA and a certificate for ``dns_name`` alone (no IP address), written to ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_usage = [
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    ]
    _openssl("req", "-x509", *_KEY, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
             "-subj", "/CN=knowhub test CA", *ca_usage, cwd=folder)  # fmt: skip
    _openssl("req", *_KEY, "-keyout", "key.pem", "-out", "cert.csr", "-subj", f"/CN={dns_name}",
             cwd=folder)  # fmt: skip
    (folder / "ext.cnf").write_text(f"subjectAltName=DNS:{dns_name}\nbasicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", "cert.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "cert.pem", "-days", "1", "-extfile", "ext.cnf",
             cwd=folder)  # fmt: skip
    return Certificates(folder / "ca.pem", folder / "cert.pem", folder / "key.pem")
