"""TLS (https://, a client certificate for mutual TLS) and bearer tokens,
against a node that requires both."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from sepp import (EnqueueRequest, PermissionDenied, SeppClient, Unauthenticated, UnknownOutcome)

from cluster import Cluster, hash_token

PRODUCER, OPERATOR = "producer-token-1234", "operator-token-5678"


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(d: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=sepp test CA",
            "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))
    for name, ext in [("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
                      ("client", "extendedKeyUsage=clientAuth")]:
        (d / f"{name}.ext").write_text(ext + "\n")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", str(d / f"{name}.key"),
                "-out", str(d / f"{name}.csr"))
        openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
                "-CAcreateserial", "-days", "2", "-extfile", str(d / f"{name}.ext"), "-out", str(d / f"{name}.pem"))


@pytest.fixture(scope="module")
def secure(binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    d = tmp_path_factory.mktemp("pki")
    make_pki(d)
    extra = f"""
[tls]
cert_file = "{d / 'server.pem'}"
key_file = "{d / 'server.key'}"
client_ca_file = "{d / 'ca.pem'}"

[auth]
enabled = true
tokens = [
  {{ name = "app", sha256 = "{hash_token(PRODUCER)}", roles = ["producer"] }},
  {{ name = "ops", sha256 = "{hash_token(OPERATOR)}", roles = ["producer", "worker", "viewer", "operator"] }},
]
"""
    c = Cluster.start(binary, 1, extra)
    try:
        yield c, d
    finally:
        c.stop()


async def connect(c: Cluster, d: Path, token: str | None, retry: float = 30) -> SeppClient:
    return await SeppClient.connect(f"https://{c.nodes[0].grpc}", token=token,
                                    root_certificates=(d / "ca.pem").read_bytes(),
                                    private_key=(d / "client.key").read_bytes(),
                                    certificate_chain=(d / "client.pem").read_bytes(), retry_timeout=retry)


async def test_tls_and_token(secure: tuple[Cluster, Path]) -> None:
    c, d = secure
    async with await connect(c, d, OPERATOR) as client:
        await client.server_info()
        res = await client.enqueue(EnqueueRequest("secure", "x", b"over tls"))
        (got,) = await client.reserve("secure")
        assert (got.job.id, got.job.payload) == (res.job_id, b"over tls")
        await client.ack(got.ctx)


async def test_missing_token_is_unauthenticated(secure: tuple[Cluster, Path]) -> None:
    c, d = secure
    async with await connect(c, d, OPERATOR) as ok:
        await ok.server_info()  # the node is up and leads
    async with await connect(c, d, None) as client:
        with pytest.raises(Unauthenticated):
            await client.enqueue(EnqueueRequest("secure", "x"))


async def test_role_without_the_call_is_permission_denied(secure: tuple[Cluster, Path]) -> None:
    c, d = secure
    async with await connect(c, d, OPERATOR) as ok:
        await ok.server_info()
    async with await connect(c, d, PRODUCER) as client:
        await client.enqueue(EnqueueRequest("secure", "x"))
        with pytest.raises(PermissionDenied):
            await client.reserve("secure")


async def test_plaintext_to_a_tls_node_fails(secure: tuple[Cluster, Path]) -> None:
    c, _ = secure
    async with await SeppClient.connect(f"http://{c.nodes[0].grpc}", token=OPERATOR, retry_timeout=0.5) as client:
        with pytest.raises(UnknownOutcome):
            await asyncio.wait_for(client.enqueue(EnqueueRequest("secure", "x")), 10)
