"""Testing code that uses sepp with the sepp_server fixture (sepp.testing).

The fixture comes with the package (its pytest plugin): once sepp is
installed, a test names ``sepp_server`` and gets a real single-node server
of its own, on free ports in a temporary folder, stopped after the test.
This file is self-contained, so it runs as is in a project of your own
(``make check-packages`` runs it in a fresh virtualenv that installed the
wheel).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from sepp import (DeadLetterRecord, Delivery, EnqueueRequest, JobState, Permanent,
                  RetryDirective, SeppClient, Worker)
from sepp.testing import SeppServer

EMAILS = """
[storage]
dead_letter_retention_ms = 3600000

[[queues]]
name = "emails"
default_max_attempts = 2
"""


async def send_welcome(client: SeppClient, address: str) -> int:
    """Code under test: it enqueues a job."""
    result = await client.enqueue(EnqueueRequest("emails", "welcome", address.encode()))
    return result.job_id


@pytest.mark.sepp_config(EMAILS)
@pytest.mark.asyncio
async def test_send_welcome_enqueues_a_job(sepp_server: SeppServer) -> None:
    async with await sepp_server.connect() as client:
        job_id = await send_welcome(client, "ada@example.com")

        [job] = await client.reserve("emails", wait=timedelta(seconds=5))
        assert (job.ctx.job_id, job.job.payload) == (job_id, b"ada@example.com")
        # The queue's config reached the server: two attempts, not three.
        assert job.ctx.max_attempts == 2
        await client.ack(job.ctx)
        jobs, _ = await client.list_jobs("emails", state=JobState.READY)
        assert jobs == []


@pytest.mark.sepp_config(EMAILS)
@pytest.mark.asyncio
async def test_a_failing_job_ends_in_the_dead_letters(sepp_server: SeppServer) -> None:
    async with await sepp_server.connect() as client:
        job_id = await send_welcome(client, "")
        for _ in range(2):
            [job] = await client.reserve("emails", wait=timedelta(seconds=5))
            dead = await client.nack(job.ctx, RetryDirective.default(), "no address")
        assert dead
        [record] = await client.drain_dead_letters("emails", max=10)
        assert (record.job.id, record.last_reason) == (job_id, "no address")


@pytest.mark.asyncio
async def test_each_test_gets_a_fresh_server(sepp_server: SeppServer) -> None:
    async with await sepp_server.connect() as client:
        assert [q.name for q in await client.list_queues()] == []


async def welcome(job: Delivery) -> None:
    """A handler under test: a job without an address cannot succeed."""
    if not job.job.payload:
        raise Permanent("no address")


@pytest.mark.sepp_config(EMAILS)
@pytest.mark.asyncio
async def test_a_worker_acks_good_jobs_and_dead_letters_bad_ones(sepp_server: SeppServer) -> None:
    async with await sepp_server.connect() as client:
        await send_welcome(client, "ada@example.com")
        bad = await send_welcome(client, "")
        worker = Worker(client, concurrency=2, wait=timedelta(milliseconds=200))
        worker.handle("emails", "welcome", welcome)
        async with worker:
            records: list[DeadLetterRecord] = []
            for _ in range(100):  # up to 10 s for the worker to get through both
                records += await client.drain_dead_letters("emails", max=10)
                waiting, _ = await client.list_jobs("emails", state=JobState.READY)
                if records and not waiting:
                    break
                await asyncio.sleep(0.1)
        assert [(r.job.id, r.last_reason) for r in records] == [(bad, "no address")]
