"""A real sepp server for tests: one `sepp serve` node in a temporary folder.

``SeppServer`` starts the ``sepp`` binary as a cluster of one, on free
loopback ports, with its data in a temporary folder, waits until the node is
ready (its ``/readyz`` answers 200: it leads and has applied its log), and
stops it and removes the folder on ``stop()`` or at the end of a ``with``
block. Jobs go through the same state machine, leases, retries and
dead-letter rules as in production.

    from sepp.testing import SeppServer

    with SeppServer(config='[[queues]]\\nname = "emails"\\ndefault_max_attempts = 5\\n') as server:
        client = await server.connect()
        ...

The binary is the one named by ``binary=``, else ``$SEPP_BIN``, else
``sepp`` on ``PATH``. With pytest, the ``sepp_server`` fixture
(``sepp.pytest_plugin``, loaded automatically once the package is installed)
gives each test a server of its own.

Only the standard library is needed here (the client comes from ``sepp``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Optional, Union

from sepp.client import SeppClient

__all__ = ["SeppServer", "SeppServerError", "find_binary"]

_StrPath = Union[str, os.PathLike[str]]


class SeppServerError(RuntimeError):
    """The test server could not be found, started or made ready. The
    message carries the end of the server's log when there is one."""


def find_binary(binary: Optional[_StrPath] = None) -> Path:
    """The sepp binary to run: ``binary`` if given, else ``$SEPP_BIN``, else
    ``sepp`` on ``PATH``. Raises SeppServerError naming all three when none
    is there."""
    if binary is not None and str(binary) != "":
        p = Path(binary)
        if not p.is_file():
            raise SeppServerError(f"sepp binary {str(p)!r} does not exist")
        return p
    env = os.environ.get("SEPP_BIN", "")
    if env:
        p = Path(env)
        if not p.is_file():
            raise SeppServerError(f"SEPP_BIN names {env!r}, which does not exist")
        return p
    found = shutil.which("sepp")
    if found is None:
        raise SeppServerError(
            "no sepp binary: set SEPP_BIN to its path, or put `sepp` on PATH "
            "(in a checkout of the server: `make build` writes bin/sepp)")
    return Path(found)


def _free_ports(n: int) -> list[int]:
    """n loopback ports free a moment ago. Another process may take one
    before the server binds it; start() then tries other ports."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


# Servers still running at interpreter exit (a test run interrupted between
# start and stop, a server never stopped) are stopped then, so none
# outlives the tests.
_running: set[SeppServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_running):
        server.stop()


class SeppServer:
    """One ``sepp serve`` node for a test.

    ``config`` is TOML as in a ``sepp serve`` config file: ``[limits]``,
    ``[storage]``, ``[[queues]]`` (the node's addresses and data dir are the
    server's, given on its command line). ``startup_timeout`` bounds the
    wait for readiness, in seconds.
    """

    def __init__(self, config: str = "", *, binary: Optional[_StrPath] = None,
                 startup_timeout: float = 30.0) -> None:
        self.config = config
        self.binary = find_binary(binary)
        self.startup_timeout = startup_timeout
        self._dir: Optional[Path] = None
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._grpc_addr = ""
        self._http_addr = ""

    @property
    def address(self) -> str:
        """The API's URL, ``http://127.0.0.1:PORT``, for SeppClient.connect."""
        return f"http://{self.grpc_addr}"

    @property
    def grpc_addr(self) -> str:
        """``127.0.0.1:PORT`` of the API (gRPC, Connect and gRPC-Web)."""
        self._check_started()
        return self._grpc_addr

    @property
    def http_addr(self) -> str:
        """``127.0.0.1:PORT`` of /metrics, /healthz, /readyz and the admin UI."""
        self._check_started()
        return self._http_addr

    @property
    def dir(self) -> Path:
        """The temporary folder: the config, the log (sepp.log) and data/."""
        self._check_started()
        assert self._dir is not None
        return self._dir

    def _check_started(self) -> None:
        if self._proc is None:
            raise SeppServerError("the sepp test server is not running: call start() or use `with`")

    def start(self) -> SeppServer:
        """Start the node and wait until it is ready. A port taken between
        choosing and binding it is retried on other ports, twice."""
        if self._proc is not None:
            raise SeppServerError("the sepp test server is running already")
        self._dir = Path(tempfile.mkdtemp(prefix="sepp-test-"))
        tries = 1
        try:
            while not self._launch(last_try=tries == 3):
                tries += 1
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self, last_try: bool) -> bool:
        """One start on fresh ports: True once ready, False when a port was
        taken (and this is not the last try); raises otherwise."""
        assert self._dir is not None
        grpc_port, http_port, raft_port = _free_ports(3)
        self._grpc_addr = f"127.0.0.1:{grpc_port}"
        self._http_addr = f"127.0.0.1:{http_port}"
        cmd = [str(self.binary), "serve", "--grpc-addr", self._grpc_addr, "--http-addr", self._http_addr,
               "--raft-addr", f"127.0.0.1:{raft_port}", "--data-dir", str(self._dir / "data")]
        if self.config:
            (self._dir / "sepp.toml").write_text(self.config)
            cmd += ["--config", str(self._dir / "sepp.toml")]
        with open(self._dir / "sepp.log", "wb") as log:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        _running.add(self)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                if "address already in use" in self.logs() and not last_try:
                    return False
                raise SeppServerError(f"sepp serve exited with status {code} before it was ready:\n{self.logs()}")
            if self._ready():
                return True
            time.sleep(0.05)
        raise SeppServerError(f"sepp serve was not ready within {self.startup_timeout:g}s:\n{self.logs()}")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self._http_addr}/readyz", timeout=1) as resp:
                return int(resp.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """Stop the node (SIGTERM, SIGKILL after 10 s) and remove its folder.
        Safe to call twice."""
        proc, self._proc = self._proc, None
        _running.discard(self)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def logs(self) -> str:
        """The end of the server's log (the last 8 KiB), for a failing
        test's message."""
        if self._dir is None:
            return ""
        try:
            return (self._dir / "sepp.log").read_bytes()[-8192:].decode(errors="replace")
        except OSError:
            return ""

    async def connect(self, **options: Any) -> SeppClient:
        """A SeppClient of this server; ``options`` go to SeppClient.connect.
        Close it (``async with``) before the server stops."""
        return await SeppClient.connect(self.address, **options)

    def __enter__(self) -> SeppServer:
        return self.start()

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()
