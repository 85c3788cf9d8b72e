"""Every Python sample of the spec pages, run verbatim."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SAMPLES = HERE / "spec_samples"


def run_in_netns(binary: Path, sample: str) -> dict[str, list[dict[str, object]]]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.fail("unshare (util-linux) is needed to give the sample its own localhost:50051")
    env = dict(os.environ, PYTHONPATH=f"{HERE.parent / 'src'}:{HERE}")
    # Root gets a plain network namespace; anyone else a user namespace too.
    cmd = [unshare, "-n"] if os.geteuid() == 0 else [unshare, "-rn"]
    p = subprocess.run(cmd + [sys.executable, str(HERE / "run_sample.py"), str(binary), str(SAMPLES / sample)],
                       env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, f"sample {sample} failed:\n{p.stdout}\n{p.stderr}"
    return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_priority_max_sample(binary: Path) -> None:
    held = run_in_netns(binary, "priority_max.py")
    assert held == {"emails": [{"job_type": "password_reset", "priority": 9, "state": "ready",
                                "scheduled_at": None, "enqueued_at": held["emails"][0]["enqueued_at"]}]}


def test_scheduled_at_sample(binary: Path) -> None:
    before = time.time()
    held = run_in_netns(binary, "scheduled_at.py")
    assert list(held) == ["reports"] and len(held["reports"]) == 1
    job = held["reports"][0]
    assert job["job_type"] == "daily_rollup" and job["state"] == "scheduled"
    # One hour after the sample's now, which lies between before and now.
    sched = float(job["scheduled_at"])  # type: ignore[arg-type]
    assert before + 3600 <= sched <= time.time() + 3600


def spec_python_samples(text: str) -> list[str]:
    """The Python samples of a spec page: from an 'import asyncio' line to
    the blank line before the next non-indented line that is not Python."""
    out = []
    for m in re.finditer(r"^import asyncio\n.*?(?=\n\n(?:import \{|use |[A-Z][a-z]+ [a-z]))", text, re.S | re.M):
        out.append(m.group(0).strip() + "\n")
    return out


def test_samples_are_the_spec_pages_verbatim() -> None:
    spec_dir = os.environ.get("SEPP_SPEC_DIR", "")
    copies = sorted(p.read_text() for p in SAMPLES.glob("*.py"))
    if not spec_dir:
        # The pages live outside the repository; the copies stand alone.
        assert len(copies) == 2
        return
    spec = Path(spec_dir)
    assert spec.is_dir(), f"SEPP_SPEC_DIR {spec_dir!r} is not a folder"
    found = sorted(s for page in spec.glob("*.txt") for s in spec_python_samples(page.read_text()))
    assert found == copies


def test_readme_quick_start(binary: Path, tmp_path: Path) -> None:
    """The README's quick start, verbatim, against localhost:50051."""
    readme = (HERE.parent / "README.md").read_text()
    start = readme.index("## Quick start")
    block = re.search(r"```python\n(.*?)```", readme[start:], re.S)
    assert block is not None
    sample = tmp_path / "quick_start.py"
    # As a module whose main() the runner calls, not at import.
    sample.write_text(block.group(1).replace("asyncio.run(main())", ""))
    held = run_in_netns(binary, str(sample))
    # emails: enqueued, reserved and acked; reports: one job, an hour out.
    assert held.get("emails", []) == []
    assert [(j["job_type"], j["state"]) for j in held["reports"]] == [("daily_rollup", "scheduled")]
