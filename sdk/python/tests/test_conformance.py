"""The SDK conformance suite (conformance/scenarios at the repository's
root), run with SeppClient against the session's three-node cluster; and
the runner's self-test: a scenario that expects the wrong thing fails."""

from __future__ import annotations

import time

import pytest

from sepp import SeppClient

from cluster import Cluster
from conformance import Mismatch, load_scenarios, parse_scenario, run_scenario

SCENARIOS = load_scenarios()


def test_there_are_scenarios() -> None:
    assert len(SCENARIOS) >= 15


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario(name: str, cluster: Cluster) -> None:
    async with await SeppClient.connect(cluster.addrs) as client:
        try:
            await run_scenario(client, SCENARIOS[name], f"py-{name}-{time.time_ns()}")
        except Mismatch as e:
            pytest.fail(f"{SCENARIOS[name].description}: {e}", pytrace=False)


BAD = {
    "wrong_result_field": (
        '[{"op": "enqueue", "args": {"queue": "${run}-q", "job_type": "t"}},'
        ' {"op": "reserve", "args": {"queue": "${run}-q"}, "expect": {"jobs": [{"job_type": "not-t"}]}}]',
        'step 2 (reserve): result.jobs[0].job_type: expected "not-t", got "t"'),
    "wrong_length": (
        '[{"op": "reserve", "args": {"queue": "${run}-q"}, "expect": {"jobs": [{"job_type": "t"}]}}]',
        "step 1 (reserve): result.jobs: expected 1 elements, got 0"),
    "error_that_does_not_come": (
        '[{"op": "create_queue", "args": {"name": "${run}-q"}, "error": {"kind": "already_exists"}}]',
        "step 1 (create_queue): expected error already_exists, got result"),
    "other_error": (
        '[{"op": "get_job", "args": {"job_id": 999999999}, "error": {"kind": "wrong_state"}}]',
        "step 1 (get_job): expected error wrong_state, got not_found"),
    "unexpected_error": (
        '[{"op": "get_job", "args": {"job_id": 999999999}}]',
        "step 1 (get_job): unexpected error: not_found"),
    "not_within": (
        '[{"op": "reserve", "args": {"queue": "${run}-q"}, "within_ms": 300, "expect": {"jobs": [{"job_type": "t"}]}}]',
        "step 1 (reserve): not within 300 ms: result.jobs: expected 1 elements, got 0"),
    "unknown_op": ('[{"op": "enqueue_many", "args": {}}]', "step 1 (enqueue_many): unknown op 'enqueue_many'"),
    "unknown_variable": (
        '[{"op": "get_job", "args": {"job_id": "${nothing}"}}]', "step 1 (get_job): unknown variable ${nothing}"),
}


@pytest.mark.parametrize("name", sorted(BAD))
async def test_runner_reports_mismatch(name: str, cluster: Cluster) -> None:
    steps, want = BAD[name]
    sc = parse_scenario('{"description": "bad", "steps": ' + steps + "}")
    async with await SeppClient.connect(cluster.addrs) as client:
        with pytest.raises(Mismatch) as info:
            await run_scenario(client, sc, f"py-bad-{name}-{time.time_ns()}")
    assert str(info.value).startswith(want), str(info.value)
