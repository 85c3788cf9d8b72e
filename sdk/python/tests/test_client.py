"""Each call of SeppClient against the real three-node cluster."""

from __future__ import annotations

import asyncio
import secrets
from datetime import datetime, timedelta, timezone

import pytest

from sepp import (ClientClosed, DeadLetterCause, EnqueueRequest, InvalidField, JobState, LeaseLost, NotFound,
                  Priority, Progress, QueueFull, QueueSettings, ResourceExhausted, RetryDirective, ScheduledTooFar,
                  SeppClient, UnknownOutcome, Unavailable, WrongState)

from cluster import Cluster


def q() -> str:
    """A queue of the test's own, so tests do not see each other's jobs."""
    return "t-" + secrets.token_hex(4)


async def test_priority_order_then_fifo(client: SeppClient) -> None:
    queue = q()
    ids = {}
    for name, prio in [("low", Priority.P0), ("max", Priority.MAX), ("mid1", Priority.P5), ("mid2", Priority.P5)]:
        ids[name] = (await client.enqueue(EnqueueRequest(queue, name, priority=prio))).job_id
    ds = await client.reserve(queue, max=4)
    assert [d.job.id for d in ds] == [ids["max"], ids["mid1"], ids["mid2"], ids["low"]]
    assert [d.job.priority for d in ds] == [9, 5, 5, 0]
    assert await client.ack_batch([d.ctx for d in ds]) == [None, None, None, None]


async def test_enqueue_fields_round_trip(client: SeppClient) -> None:
    queue = q()
    res = await client.enqueue(EnqueueRequest(queue, "welcome", b"\x00payload", max_attempts=5,
                                              custom={"tenant": "acme"}))
    assert res.state == JobState.READY and res.duplicate is False and len(res.idempotency_key) == 32
    (d,) = await client.reserve(queue, worker_id="w-1")
    assert (d.job.id, d.job.job_type, d.job.payload, d.job.custom) == (res.job_id, "welcome", b"\x00payload",
                                                                       {"tenant": "acme"})
    assert (d.ctx.attempt, d.ctx.max_attempts, d.ctx.queue, d.ctx.worker_id) == (1, 5, queue, "w-1")
    assert d.ctx.last_attempt is False
    await client.ack(d.ctx)
    with pytest.raises(LeaseLost):
        await client.ack(d.ctx)


async def test_scheduled_at_and_schedule_horizon(client: SeppClient) -> None:
    run_at = datetime.now(timezone.utc) + timedelta(minutes=30)
    res = await client.enqueue(EnqueueRequest(q(), "later", scheduled_at=run_at))
    assert res.state == JobState.SCHEDULED
    job = await client.get_job(res.job_id)
    assert job.scheduled_at is not None and abs(job.scheduled_at - run_at) < timedelta(milliseconds=1)

    too_far = datetime.now(timezone.utc) + timedelta(minutes=5)
    with pytest.raises(ScheduledTooFar) as e:
        await client.enqueue(EnqueueRequest("near", "x", scheduled_at=too_far))
    assert e.value.queue == "near"
    assert e.value.horizon == timedelta(minutes=1)
    assert abs(e.value.requested_at - too_far) < timedelta(milliseconds=1)
    assert timedelta(0) < too_far - e.value.latest_allowed < timedelta(minutes=5)


async def test_invalid_field_names_the_field(client: SeppClient) -> None:
    with pytest.raises(InvalidField) as e:
        EnqueueRequest("emails", "x", priority=10)
    assert (e.value.field, e.value.limit) == ("priority", "0..9")
    # The server's own check, with its FieldViolation detail.
    with pytest.raises(InvalidField) as e:
        await client.enqueue(EnqueueRequest("bad queue!", "x"))
    assert e.value.field == "queue" and "queue" in str(e.value)


async def test_idempotency_key_returns_the_first_job(client: SeppClient) -> None:
    queue, key = q(), "order-" + secrets.token_hex(8)
    first = await client.enqueue(EnqueueRequest(queue, "charge", idempotency_key=key))
    again = await client.enqueue(EnqueueRequest(queue, "charge", idempotency_key=key))
    assert (again.job_id, again.duplicate, first.duplicate) == (first.job_id, True, False)
    jobs, _ = await client.list_jobs(queue, state=JobState.READY)
    assert [j.id for j in jobs] == [first.job_id]


async def test_enqueue_batch_per_item_results(client: SeppClient) -> None:
    queue = q()
    results = await client.enqueue_batch([
        EnqueueRequest(queue, "a"),
        EnqueueRequest("bad queue!", "b"),
        EnqueueRequest(queue, "c", priority=Priority.P3),
    ])
    assert [r.ok for r in results] == [True, False, True]
    err = results[1].error
    assert isinstance(err, InvalidField) and err.field == "jobs[1].queue"
    r0, r2 = results[0].result, results[2].result
    assert r0 is not None and r2 is not None and r0.job_id != r2.job_id
    ds = await client.reserve(queue, max=10)
    assert [d.job.job_type for d in ds] == ["c", "a"]


async def test_queue_full_is_resource_exhausted(client: SeppClient) -> None:
    queue = "tiny"
    for d in await client.reserve(queue, max=10):
        await client.ack(d.ctx)
    jobs, _ = await client.list_jobs(queue, state=JobState.READY)
    for _ in range(2 - len(jobs)):
        await client.enqueue(EnqueueRequest(queue, "x"))
    with pytest.raises(QueueFull) as e:
        await client.enqueue(EnqueueRequest(queue, "x"))
    assert isinstance(e.value, ResourceExhausted)


async def test_nack_directives_and_drain(client: SeppClient) -> None:
    queue = q()
    res = await client.enqueue(EnqueueRequest(queue, "flaky", b"p", priority=Priority.P4, max_attempts=3,
                                              custom={"k": "v"}))
    (d,) = await client.reserve(queue)
    assert await client.nack(d.ctx, RetryDirective.default(), "transient") is False
    (d,) = await client.reserve(queue)
    assert d.ctx.attempt == 2 and d.job.last_reason == "transient"
    assert await client.nack(d.ctx, RetryDirective.after(timedelta(seconds=30)), "later") is False
    job = await client.get_job(res.job_id)
    assert job.state == JobState.SCHEDULED and job.next_attempt_at is not None
    assert await client.reserve(queue) == []
    await client.dead_letter_jobs([res.job_id], "pull it")  # a live scheduled job, by an operator
    rec = await client.get_dead_letter(res.job_id)
    assert rec.cause == DeadLetterCause.ADMIN

    # DeadLetter directive: rejected.
    res2 = await client.enqueue(EnqueueRequest(queue, "bad"))
    (d,) = await client.reserve(queue)
    assert await client.nack(d.ctx, RetryDirective.dead_letter(), "unrecoverable") is True
    # The last attempt failing: attempts exhausted.
    res3 = await client.enqueue(EnqueueRequest(queue, "once", max_attempts=1))
    (d,) = await client.reserve(queue)
    assert d.ctx.last_attempt is True
    assert await client.nack(d.ctx, reason="boom") is True

    info = await client.server_info()
    assert info.dead_letter_retention_enabled is True
    records = await client.drain_dead_letters(queue, 100)
    assert [(r.job_id, r.cause, r.last_reason, r.final_attempt) for r in records] == [
        (res.job_id, DeadLetterCause.ADMIN, "pull it", 2),
        (res2.job_id, DeadLetterCause.REJECTED, "unrecoverable", 1),
        (res3.job_id, DeadLetterCause.ATTEMPTS_EXHAUSTED, "boom", 1),
    ]
    assert await client.drain_dead_letters(queue, 100) == []
    replay = records[0].to_enqueue_request()
    assert (replay.queue, replay.job_type, replay.payload, replay.priority, replay.custom) == (
        queue, "flaky", b"p", 4, {"k": "v"})
    again = await client.enqueue(replay)
    assert again.job_id != res.job_id
    (d,) = await client.reserve(queue)
    assert (d.job.id, d.ctx.attempt) == (again.job_id, 1)


async def test_wait_job_outcomes(client: SeppClient) -> None:
    queue = q()
    res = await client.enqueue(EnqueueRequest(queue, "resize"))
    out = await client.poll_job(res.job_id, timeout=timedelta(milliseconds=50))
    assert out.terminal is False and out.state == JobState.READY and out.job.id == res.job_id

    waiting = asyncio.create_task(client.wait_job(res.job_id))
    (d,) = await client.reserve(queue)
    assert await client.nack(d.ctx, RetryDirective.dead_letter(), "corrupt image") is True
    async with asyncio.timeout(10):
        out = await waiting
    assert (out.terminal, out.state, out.cause) == (True, JobState.DEAD, DeadLetterCause.REJECTED)
    assert out.finished_at is not None

    with pytest.raises(NotFound):
        await client.wait_job(res.job_id + 100000)


async def test_ack_with_result(client: SeppClient) -> None:
    # Queue "kept" keeps completed jobs an hour (conftest): the result is
    # read back by wait_job and get_job.
    res = await client.enqueue(EnqueueRequest("kept", "resize"))
    waiting = asyncio.create_task(client.wait_job(res.job_id))
    (d,) = await client.reserve("kept")
    await client.ack_with_result(d.ctx, b'{"width":640}')
    async with asyncio.timeout(10):
        out = await waiting
    assert (out.terminal, out.state, out.result) == (True, JobState.COMPLETED, b'{"width":640}')
    assert out.finished_at is not None
    job = await client.get_job(res.job_id)
    assert (job.state, job.result, job.attempt) == (JobState.COMPLETED, b'{"width":640}', 1)
    assert job.completed_at is not None and job.run_time is not None

    # A queue created keeping completed jobs: its own and effective settings.
    kept = q()
    eff = await client.create_queue(kept, QueueSettings(completed_retention=timedelta(minutes=5)))
    assert eff.completed_retention == timedelta(minutes=5)
    info = await client.get_queue(kept)
    assert info.settings.completed_retention == timedelta(minutes=5)

    # A queue that keeps none refuses a result; the lease still holds.
    queue = q()
    await client.enqueue(EnqueueRequest(queue, "resize"))
    (d,) = await client.reserve(queue)
    with pytest.raises(WrongState):
        await client.ack_with_result(d.ctx, b"lost")
    await client.ack(d.ctx)


async def test_report_progress(client: SeppClient) -> None:
    queue = q()
    res = await client.enqueue(EnqueueRequest(queue, "export"))
    (d,) = await client.reserve(queue, lease=timedelta(seconds=30))
    assert d.job.progress is None
    deadline = await client.report_progress(d.ctx, 40, "exported 4000 of 10000 rows", lease=timedelta(minutes=2))
    assert deadline is not None and d.ctx.lease_deadline is not None and deadline > d.ctx.lease_deadline
    job = await client.get_job(res.job_id)
    assert job.progress == Progress(40, "exported 4000 of 10000 rows")
    await client.extend_lease(d.ctx)  # a plain extension keeps it
    assert (await client.get_job(res.job_id)).progress == Progress(40, "exported 4000 of 10000 rows")
    with pytest.raises(InvalidField) as e:
        await client.report_progress(d.ctx, 101)
    assert e.value.field == "progress.percent"
    with pytest.raises(InvalidField) as e:
        await client.report_progress(d.ctx, 1, "x" * 257)
    assert e.value.field == "progress.message"
    await client.nack(d.ctx, RetryDirective.default(), "again")
    assert (await client.get_job(res.job_id)).progress is None  # the retry starts without


async def test_release_and_extend_lease(client: SeppClient) -> None:
    queue = q()
    res = await client.enqueue(EnqueueRequest(queue, "x"))
    (d,) = await client.reserve(queue, lease=timedelta(seconds=5))
    assert d.ctx.lease_deadline is not None
    deadline = await client.extend_lease(d.ctx, timedelta(seconds=60))
    assert deadline is not None and deadline - d.ctx.lease_deadline > timedelta(seconds=50)
    await client.release(d.ctx)
    with pytest.raises(LeaseLost):
        await client.extend_lease(d.ctx)
    (d2,) = await client.reserve(queue)
    assert d2.job.id == res.job_id and d2.ctx.lease_token != d.ctx.lease_token
    job = await client.get_job(res.job_id)
    assert job.history[-1].outcome == "released"
    await client.ack(d2.ctx)
    with pytest.raises(NotFound):
        await client.get_job(res.job_id)


async def test_ack_batch_per_item(client: SeppClient) -> None:
    queue = q()
    await client.enqueue_batch([EnqueueRequest(queue, "x") for _ in range(3)])
    ds = await client.reserve(queue, max=3)
    await client.ack(ds[1].ctx)
    errs = await client.ack_batch([d.ctx for d in ds])
    assert errs[0] is None and errs[2] is None and isinstance(errs[1], LeaseLost)


async def test_admin_calls(client: SeppClient) -> None:
    queue = q()
    a = await client.enqueue(EnqueueRequest(queue, "a"))
    b = await client.enqueue(EnqueueRequest(queue, "b"))
    await client.pause_queue(queue)
    assert await client.reserve(queue) == []
    stats = {s.name: s for s in await client.list_queues()}
    assert (stats[queue].paused, stats[queue].ready) == (True, 2)
    await client.resume_queue(queue)
    results = await client.dead_letter_jobs([a.job_id, 999_999_999], "operator")
    assert results[0].ok and isinstance(results[1].error, NotFound)
    recs, _ = await client.list_dead_letters(queue)
    assert [r.job_id for r in recs] == [a.job_id]
    assert (await client.requeue_dead_letters([a.job_id]))[0].ok
    jobs, _ = await client.list_jobs(queue, state=JobState.READY)
    assert sorted(j.id for j in jobs) == sorted([a.job_id, b.job_id])
    await client.dead_letter_jobs([b.job_id])
    assert (await client.delete_dead_letters([b.job_id]))[0].ok
    with pytest.raises(NotFound):
        await client.get_dead_letter(b.job_id)


async def test_server_info(client: SeppClient) -> None:
    info = await client.server_info()
    assert info.leader_addr and client.leader == info.leader_addr
    assert info.schedule_horizon("near") == timedelta(minutes=1)
    assert info.schedule_horizon("other") == timedelta(days=30)
    assert info.limits.max_priority == 9


async def test_follows_the_leader_from_a_follower(cluster: Cluster, client: SeppClient) -> None:
    leader = (await client.server_info()).leader_addr
    follower = next(a for a in cluster.addrs if not a.endswith(leader))
    async with await SeppClient.connect(follower) as c:
        await c.enqueue(EnqueueRequest(q(), "x"))
        assert c.leader == leader


async def test_unreachable_node_is_unavailable() -> None:
    async with await SeppClient.connect("http://127.0.0.1:9", retry_timeout=0.3) as c:
        # The refused connection may come after the request left: unknown.
        with pytest.raises(UnknownOutcome) as e:
            await c.enqueue(EnqueueRequest("q", "x"))
        assert isinstance(e.value.last, Unavailable)


async def test_closed_client() -> None:
    c = await SeppClient.connect("127.0.0.1:9")
    await c.close()
    with pytest.raises(ClientClosed):
        await c.server_info()


async def test_timeout_by_the_caller(client: SeppClient) -> None:
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(client.reserve(q(), wait=timedelta(seconds=5)), 0.3)


async def test_ack_with_follow_ups(client: SeppClient) -> None:
    # The ack and its follow-ups in one log entry: their results (a
    # generated key, a duplicate of a held key), the acked job gone.
    queue, nxt = q(), q()
    held = await client.enqueue(EnqueueRequest(nxt, "t", idempotency_key="held"))
    res = await client.enqueue(EnqueueRequest(queue, "charge"))
    (d,) = await client.reserve(queue)
    # A bad follow-up refuses the ack, naming it; the job stays reserved.
    with pytest.raises(InvalidField) as bad:
        await client.ack_with_follow_ups(d.ctx, [EnqueueRequest(nxt, "t"), EnqueueRequest(nxt, "")])
    assert bad.value.field.startswith("follow_ups[1]")
    assert (await client.get_job(res.job_id)).state == JobState.RESERVED
    out = await client.ack_with_follow_ups(d.ctx, [EnqueueRequest(nxt, "ship", b"p"),
                                                   EnqueueRequest(nxt, "t", idempotency_key="held")])
    assert [(r.state, r.duplicate) for r in out] == [(JobState.READY, False), (JobState.READY, True)]
    assert out[0].idempotency_key and out[1].job_id == held.job_id
    job = await client.get_job(out[0].job_id)
    assert (job.job_type, job.payload) == ("ship", b"p")
    with pytest.raises(NotFound):
        await client.get_job(res.job_id)
    # The same ack again: the lease is gone, nothing more is enqueued.
    with pytest.raises(LeaseLost):
        await client.ack_with_follow_ups(d.ctx, [EnqueueRequest(nxt, "never")])
    assert len(await client.reserve(nxt, max=10)) == 2


async def test_ack_with_follow_ups_after_the_lease_lapsed(client: SeppClient) -> None:
    # A lease lost before the ack: no follow-up exists afterwards.
    queue, nxt = q(), q()
    await client.enqueue(EnqueueRequest(queue, "t"))
    (d,) = await client.reserve(queue, lease=timedelta(seconds=1))
    async with asyncio.timeout(20):
        while (await client.get_job(d.ctx.job_id)).state == JobState.RESERVED:
            await asyncio.sleep(0.05)
    with pytest.raises(LeaseLost):
        await client.ack_with_follow_ups(d.ctx, [EnqueueRequest(nxt, "never")])
    with pytest.raises(NotFound):  # the queue a follow-up would have made does not exist
        await client.get_queue(nxt)
