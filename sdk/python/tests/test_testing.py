"""sepp.testing itself: finding the binary, failing clearly, cleaning up."""

from __future__ import annotations

from pathlib import Path

import pytest

from sepp.testing import SeppServer, SeppServerError, find_binary

SRC = Path(__file__).resolve().parents[1] / "src"


def test_find_binary_names_every_place_it_looked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SEPP_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SeppServerError, match=r"set SEPP_BIN .* or put `sepp` on PATH"):
        find_binary()
    monkeypatch.setenv("SEPP_BIN", str(tmp_path / "nope"))
    with pytest.raises(SeppServerError, match="SEPP_BIN names .*nope"):
        find_binary()
    with pytest.raises(SeppServerError, match="does not exist"):
        find_binary(tmp_path / "missing")


def test_find_binary_takes_sepp_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "sepp"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.delenv("SEPP_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_binary() == fake


def test_stop_ends_the_process_and_removes_the_folder() -> None:
    server = SeppServer().start()
    folder, proc = server.dir, server._proc
    assert proc is not None and (folder / "data").is_dir()
    server.stop()
    assert proc.poll() is not None and not folder.exists()
    server.stop()  # twice is fine
    with pytest.raises(SeppServerError, match="not running"):
        _ = server.address


def test_a_config_the_server_refuses_fails_start_with_its_log() -> None:
    server = SeppServer("[limits]\ndefault_priority = 12\n")
    with pytest.raises(SeppServerError, match=r"(?s)exited with status 1 .*default_priority"):
        server.start()
    assert server._proc is None and server._dir is None


def test_the_fixture_runs_the_marked_config(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin as a user's test sees it, through the sepp_config marker."""
    pytester.makepyfile("""
        import urllib.request
        import pytest

        @pytest.mark.sepp_config('[[queues]]\\nname = "alerts"\\ndefault_priority = 7\\n')
        def test_config(sepp_server):
            with urllib.request.urlopen(f"http://{sepp_server.http_addr}/readyz") as r:
                assert r.status == 200
            assert sepp_server.address.startswith("http://127.0.0.1:")
            assert "alerts" in (sepp_server.dir / "sepp.toml").read_text()
        """)
    monkeypatch.setenv("PYTHONPATH", str(SRC))
    result = pytester.runpytest_subprocess("-p", "sepp.pytest_plugin")
    result.assert_outcomes(passed=1)


def test_the_fixture_errors_clearly_without_a_binary(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("def test_x(sepp_server):\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", str(SRC))
    monkeypatch.delenv("SEPP_BIN", raising=False)
    monkeypatch.setenv("PATH", str(pytester.path))
    result = pytester.runpytest_subprocess("-p", "sepp.pytest_plugin")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SeppServerError: no sepp binary: set SEPP_BIN*"])
