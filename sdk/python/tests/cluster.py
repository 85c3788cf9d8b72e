"""A real local sepp cluster for the tests: the binary built from this
repository, three `sepp serve` processes on loopback ports, configs
written here (as devcluster does), killed and removed by stop()."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[3]


def build_binary(out_dir: Path) -> Path:
    """`go build -o` the sepp binary (SEPP_BIN reuses a built one)."""
    if os.environ.get("SEPP_BIN"):
        return Path(os.environ["SEPP_BIN"])
    out = out_dir / "sepp"
    go = shutil.which("go") or "/usr/local/go/bin/go"
    env = dict(os.environ, CGO_ENABLED="0")
    subprocess.run([go, "build", "-o", str(out), "./cmd/sepp"], cwd=REPO, env=env, check=True)
    return out


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((host, 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class Node:
    id: str
    grpc: str
    http: str
    raft: str
    dir: Path
    proc: Optional[subprocess.Popen[bytes]] = None


@dataclass
class Cluster:
    binary: Path
    nodes: list[Node] = field(default_factory=list)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="sepp-py-")))

    @classmethod
    def start(cls, binary: Path, n: int = 3, extra: str = "", ports: Optional[list[int]] = None) -> Cluster:
        c = cls(binary)
        ports = ports or free_ports(3 * n)
        for i in range(n):
            c.nodes.append(Node(f"sepp-{i + 1}", f"127.0.0.1:{ports[3 * i]}", f"127.0.0.1:{ports[3 * i + 1]}",
                                f"127.0.0.1:{ports[3 * i + 2]}", c.root / f"sepp-{i + 1}"))
        peers = "".join(f'  {{ id = "{p.id}", raft_addr = "{p.raft}", grpc_addr = "{p.grpc}", '
                        f'http_addr = "{p.http}" }},\n' for p in c.nodes)
        for nd in c.nodes:
            nd.dir.mkdir(parents=True)
            (nd.dir / "sepp.toml").write_text(
                f'[server]\nnode_id = "{nd.id}"\ngrpc_addr = "{nd.grpc}"\nhttp_addr = "{nd.http}"\n'
                f'raft_addr = "{nd.raft}"\ndata_dir = "{nd.dir / "data"}"\n\n'
                f'[cluster]\ndetect_leader_crash = true\npeers = [\n{peers}]\n\n{extra}\n')
        for i in range(n):
            c.start_node(i)
        return c

    @property
    def addrs(self) -> list[str]:
        return [f"http://{n.grpc}" for n in self.nodes]

    def start_node(self, i: int) -> None:
        nd = self.nodes[i]
        log = open(nd.dir / "sepp.log", "ab")
        nd.proc = subprocess.Popen([str(self.binary), "serve", "--config", str(nd.dir / "sepp.toml")],
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def kill(self, i: int) -> None:
        """SIGKILL node i's process (a crash, not a shutdown)."""
        p = self.nodes[i].proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)

    def signal(self, i: int, sig: int) -> None:
        """Send sig to node i's process (SIGSTOP freezes it, SIGCONT thaws)."""
        p = self.nodes[i].proc
        if p is not None and p.poll() is None:
            p.send_signal(sig)

    def index_of(self, addr: str) -> int:
        host = addr.split("://")[-1]
        return next(i for i, n in enumerate(self.nodes) if n.grpc == host)

    def stop(self) -> None:
        for nd in self.nodes:
            if nd.proc is not None and nd.proc.poll() is None:
                nd.proc.send_signal(signal.SIGCONT)  # a frozen node must see the TERM
                nd.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for nd in self.nodes:
            if nd.proc is None:
                continue
            try:
                nd.proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                nd.proc.kill()
                nd.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def logs(self) -> str:
        return "\n".join(f"--- {n.id}\n" + (n.dir / "sepp.log").read_text(errors="replace")[-3000:]
                         for n in self.nodes if (n.dir / "sepp.log").exists())
