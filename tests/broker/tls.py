"""A self-signed CA and a broker certificate for 127.0.0.1, made with the `openssl` binary.

The broker gets a PKCS#12 keystore (its key, its certificate and the CA's); clients trust the
CA's PEM file (librdkafka's `ssl.ca.location`, the Java client's PEM truststore). Nothing is
reused between tests: each broker makes its own, valid for one day.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

KEYSTORE_PASSWORD = "broker-keystore"  # test-only, guards a file in the test's temp folder


@dataclass(frozen=True)
class BrokerTls:
    ca_pem: Path  # what clients trust
    keystore: Path  # PKCS#12: the broker's key and certificate chain
    keystore_password: str = KEYSTORE_PASSWORD


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl is needed for the TLS test broker (apt-get install openssl)")
    done = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()[-1000:]}")


def make_broker_tls(folder: Path, host: str = "127.0.0.1") -> BrokerTls:
    """A CA, a broker key and certificate signed by it (subjectAltName IP `host`)."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
        "-keyout", "ca.key", "-out", "ca.pem",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign",
        cwd=folder,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={host}",
        "-keyout", "broker.key", "-out", "broker.csr", cwd=folder,
    )  # fmt: skip
    (folder / "broker.ext").write_text(f"subjectAltName=IP:{host}\n")
    _openssl(
        "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", "broker.ext", "-out", "broker.pem",
        cwd=folder,
    )  # fmt: skip
    _openssl(
        "pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key", "-certfile", "ca.pem",
        "-name", "broker", "-out", "broker.p12", "-passout", f"pass:{KEYSTORE_PASSWORD}",
        cwd=folder,
    )  # fmt: skip
    return BrokerTls(ca_pem=folder / "ca.pem", keystore=folder / "broker.p12")
