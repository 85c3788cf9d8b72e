"""Fixtures: one real three-node cluster for the whole session, and a
client connected to it per test; and the package's own pytest plugin (the
sepp_server fixture), which an installed package registers by itself."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from sepp import SeppClient

from cluster import Cluster, build_binary

# From the source tree the package is not installed, so its pytest11 entry
# point is not there to load the plugin; pytester runs it as a user would.
pytest_plugins = ["sepp.pytest_plugin", "pytester"]

# Dead-letter retention on for the drain tests; a queue with a max length
# for QueueFull; a queue with a short horizon for ScheduledTooFar.
EXTRA = """
[storage]
dead_letter_retention_ms = 600000

[[queues]]
name = "tiny"
max_length = 2

[[queues]]
name = "near"
max_schedule_horizon_ms = 60000

[[queues]]
name = "kept"
completed_retention_ms = 3600000
"""


@pytest.fixture(scope="session")
def binary() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sepp-py-bin-") as d:
        yield build_binary(Path(d))


@pytest.fixture(scope="session")
def cluster(binary: Path) -> Iterator[Cluster]:
    c = Cluster.start(binary, 3, EXTRA)
    try:
        asyncio.run(wait_leader(c.addrs))
        yield c
    finally:
        c.stop()


async def wait_leader(addrs: list[str], timeout: float = 60.0) -> str:
    async with await SeppClient.connect(addrs, retry_timeout=timeout) as c:
        info = await c.server_info()
        return info.leader_addr


@pytest_asyncio.fixture  # type: ignore[misc]
async def client(cluster: Cluster) -> AsyncIterator[SeppClient]:
    async with await SeppClient.connect(cluster.addrs) as c:
        yield c
