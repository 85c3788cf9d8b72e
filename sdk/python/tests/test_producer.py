"""The batching Producer against the real cluster."""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta
from typing import Any

import pytest

from sepp import ClientClosed, EnqueueRequest, InvalidField, JobState, SeppClient


def q() -> str:
    return "p-" + secrets.token_hex(4)


def count_batches(client: SeppClient) -> list[int]:
    """Wrap the client's batch call; the list gets each call's size."""
    sizes: list[int] = []
    orig = client._enqueue_batch_wire

    async def counted(jobs: Any, keys: Any) -> Any:
        sizes.append(len(jobs))
        return await orig(jobs, keys)

    setattr(client, "_enqueue_batch_wire", counted)
    return sizes


async def test_jobs_handed_over_together_leave_in_one_batch(client: SeppClient) -> None:
    queue = q()
    sizes = count_batches(client)
    async with client.producer(linger=timedelta(milliseconds=50)) as producer:
        futs = [await producer.enqueue_nowait(EnqueueRequest(queue, "x", str(i).encode())) for i in range(200)]
    results = [f.result() for f in futs]  # close() waited for every one
    assert sizes == [200]
    assert len({r.job_id for r in results}) == 200 and all(r.state == JobState.READY for r in results)
    jobs, _ = await client.list_jobs(queue, state=JobState.READY, limit=1000)
    assert [j.payload for j in jobs] == [str(i).encode() for i in range(200)]


async def test_max_batch_splits(client: SeppClient) -> None:
    sizes = count_batches(client)
    async with client.producer(max_batch=16) as producer:
        futs = [await producer.enqueue_nowait(EnqueueRequest(q(), "x")) for _ in range(40)]
    await asyncio.gather(*futs)
    assert sizes == [16, 16, 8]


async def test_item_errors_reach_their_own_caller(client: SeppClient) -> None:
    queue = q()
    async with client.producer() as producer:
        good = await producer.enqueue_nowait(EnqueueRequest(queue, "x"))
        bad = await producer.enqueue_nowait(EnqueueRequest("bad queue!", "x"))
        res = await good
        with pytest.raises(InvalidField) as e:
            await bad
    assert e.value.field == "queue" and res.job_id > 0
    with pytest.raises(ClientClosed):
        await producer.enqueue(EnqueueRequest(queue, "x"))


async def test_concurrent_callers_each_get_their_result(client: SeppClient) -> None:
    queue = q()
    async with client.producer() as producer:
        results = await asyncio.gather(*(producer.enqueue(EnqueueRequest(queue, "x", idempotency_key=f"{queue}-{i}"))
                                         for i in range(50)))
    assert [r.idempotency_key for r in results] == [f"{queue}-{i}" for i in range(50)]
    assert len({r.job_id for r in results}) == 50
