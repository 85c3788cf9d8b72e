"""The pytest plugin of sepp: a ``sepp_server`` fixture.

Installing the package registers it (the ``pytest11`` entry point), so a
test only names the fixture::

    import pytest
    from sepp import EnqueueRequest
    from sepp.testing import SeppServer

    @pytest.mark.sepp_config('[[queues]]\\nname = "emails"\\ndefault_max_attempts = 5\\n')
    @pytest.mark.asyncio
    async def test_welcome(sepp_server: SeppServer) -> None:
        async with await sepp_server.connect() as client:
            await client.enqueue(EnqueueRequest("emails", "welcome"))

Each test gets a fresh single-node server (``sepp.testing.SeppServer``),
stopped after it. The ``sepp_config`` marker passes TOML to it; the binary
is ``$SEPP_BIN``, else the ``sepp_bin`` ini option (relative to the rootdir),
else ``sepp`` on ``PATH``.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from sepp.testing import SeppServer


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("sepp_bin", "the sepp binary the sepp_server fixture runs (default: $SEPP_BIN, "
                  "else sepp on PATH); relative to the rootdir")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sepp_config(toml): TOML the sepp_server fixture's node starts with "
                            "([limits], [storage], [[queues]])")


@pytest.fixture
def sepp_server(request: pytest.FixtureRequest) -> Iterator[SeppServer]:
    """A real single-node sepp server of this test's own, ready to serve;
    stopped and its folder removed after the test."""
    marker = request.node.get_closest_marker("sepp_config")
    config = str(marker.args[0]) if marker is not None and marker.args else ""
    binary = os.environ.get("SEPP_BIN") or None
    if binary is None:
        ini = str(request.config.getini("sepp_bin"))
        if ini:
            binary = str(request.config.rootpath / ini)
    with SeppServer(config, binary=binary) as server:
        yield server
