"""The Worker against the real cluster: directives, lease keeping, a lost
lease, graceful stop."""

from __future__ import annotations

import asyncio
import secrets
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Awaitable, Callable, Optional

import pytest

from sepp import (AlreadyExists, Completion, DeadLetterCause, Delivery, EnqueueRequest, InvalidField, JobCancelled,
                  JobContext, JobState, LeaseLost, NotFound, Permanent, Progress, QueueSettings, Retry, RetryAfter,
                  SeppClient, UniqueOptions, Worker, WrongState)

from cluster import Cluster


def q() -> str:
    return "w-" + secrets.token_hex(4)


async def until(cond: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    """Wait for cond with a deadline, looking every 50 ms."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await cond():
        assert loop.time() < end, "condition not met in time"
        await asyncio.sleep(0.05)


async def counts(client: SeppClient, queue: str) -> tuple[int, int, int, int]:
    for s in await client.list_queues():
        if s.name == queue:
            return s.ready, s.reserved, s.scheduled, s.acked_total
    return 0, 0, 0, 0


async def test_handler_outcomes_map_onto_directives(client: SeppClient) -> None:
    queue = q()
    seen: list[tuple[str, int]] = []

    async def handle(d: Delivery) -> None:
        seen.append((d.job.job_type, d.ctx.attempt))
        if d.job.job_type == "retry" and d.ctx.attempt == 1:
            raise Retry("try again")
        if d.job.job_type == "after" and d.ctx.attempt == 1:
            raise RetryAfter(timedelta(milliseconds=300), "rate limited")
        if d.job.job_type == "permanent":
            raise Permanent("bad input")
        if d.job.job_type == "plain" and d.ctx.attempt == 1:
            raise ValueError("plain failure")

    w = Worker(client, concurrency=4, wait=timedelta(milliseconds=200))
    w.handle(queue, "", handle)
    ids = {t: (await client.enqueue(EnqueueRequest(queue, t, max_attempts=3))).job_id
           for t in ["ok", "retry", "after", "permanent", "plain"]}
    async with w:
        await until(lambda: _acked(client, queue, 4))
    assert sorted(seen) == sorted([("ok", 1), ("retry", 1), ("retry", 2), ("after", 1), ("after", 2),
                                   ("permanent", 1), ("plain", 1), ("plain", 2)])
    (rec,) = await client.drain_dead_letters(queue, 10)
    assert (rec.job_id, rec.cause, rec.last_reason) == (ids["permanent"], DeadLetterCause.REJECTED, "bad input")


async def _acked(client: SeppClient, queue: str, n: int) -> bool:
    return (await counts(client, queue))[3] >= n


async def test_lease_is_extended_while_the_handler_runs(client: SeppClient) -> None:
    queue = q()
    attempts: list[int] = []

    async def slow(d: Delivery) -> None:
        attempts.append(d.ctx.attempt)
        await asyncio.sleep(3.5)  # over three 1 s leases

    w = Worker(client, lease=timedelta(seconds=1), wait=timedelta(milliseconds=200))
    w.handle(queue, "slow", slow)
    await client.enqueue(EnqueueRequest(queue, "slow"))
    async with w:
        await until(lambda: _acked(client, queue, 1))
    assert attempts == [1]


async def test_lost_lease_cancels_the_handler(client: SeppClient) -> None:
    queue = q()
    started = asyncio.Event()
    cancelled = asyncio.Event()
    held: list[Delivery] = []
    errors: list[BaseException] = []

    async def hang(d: Delivery) -> None:
        held.append(d)
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    w = Worker(client, lease=timedelta(seconds=1), wait=timedelta(milliseconds=200), on_error=errors.append,
               shutdown_timeout=timedelta(milliseconds=300))
    w.handle(queue, "hang", hang)
    res = await client.enqueue(EnqueueRequest(queue, "hang"))
    async with w:
        await asyncio.wait_for(started.wait(), 20)
        # Someone else answers for the delivery: the worker's lease is gone.
        await client.release(held[0].ctx)
        await asyncio.wait_for(cancelled.wait(), 20)
    assert any(isinstance(e, LeaseLost) for e in errors)
    # The worker did not ack or nack it (and released a redelivery on stop).
    job = await client.get_job(res.job_id)
    assert job.state == JobState.READY and all(h.outcome == "released" for h in job.history)


async def test_stop_waits_for_running_and_releases_the_rest(client: SeppClient) -> None:
    queue = q()
    gate = asyncio.Event()
    running: list[int] = []

    async def gated(d: Delivery) -> None:
        running.append(d.job.id)
        await gate.wait()

    await client.enqueue_batch([EnqueueRequest(queue, "g") for _ in range(5)])
    w = Worker(client, concurrency=2, max_reserve=2, wait=timedelta(seconds=2))
    w.handle(queue, "g", gated)
    await w.start()
    await until(lambda: _n(running, 2))
    stopping = asyncio.ensure_future(w.stop())
    await asyncio.sleep(0.2)
    assert not stopping.done()  # it waits for the two running handlers
    gate.set()
    await asyncio.wait_for(stopping, 20)
    ready, reserved, _, acked = await counts(client, queue)
    assert (ready, reserved, acked, len(running)) == (3, 0, 2, 2)


async def test_stop_out_of_time_cancels_and_releases(client: SeppClient) -> None:
    queue = q()
    res = await client.enqueue(EnqueueRequest(queue, "stuck"))
    started = asyncio.Event()

    async def stuck(d: Delivery) -> None:
        started.set()
        await asyncio.sleep(60)

    w = Worker(client, shutdown_timeout=timedelta(milliseconds=300), wait=timedelta(milliseconds=200))
    w.handle(queue, "stuck", stuck)
    await w.start()
    await asyncio.wait_for(started.wait(), 20)
    await asyncio.wait_for(w.stop(), 20)
    job = await client.get_job(res.job_id)
    assert job.state == JobState.READY and job.history[-1].outcome == "released"


async def test_unhandled_job_type_is_nacked(client: SeppClient) -> None:
    queue = q()
    res = await client.enqueue(EnqueueRequest(queue, "unknown", max_attempts=1))

    async def never(d: Delivery) -> None:
        raise AssertionError("not this one")

    w = Worker(client, wait=timedelta(milliseconds=200))
    w.handle(queue, "known", never)
    async with w:
        async def dead() -> bool:
            return bool((await client.list_dead_letters(queue))[0])
        await until(dead)
    (rec,) = await client.drain_dead_letters(queue, 10)
    assert rec.job_id == res.job_id and "no handler registered" in (rec.last_reason or "")


async def _n(xs: list[int], n: int) -> bool:
    return len(xs) >= n


async def test_operator_cancel_is_not_a_lost_lease(client: SeppClient, cluster: Cluster, binary: Path) -> None:
    queue = q()
    started = asyncio.Event()
    cancelled: list[str] = []
    errors: list[BaseException] = []

    async def hang(d: Delivery) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError as e:
            cancelled.append(str(e.args[0]) if e.args else "")
            raise

    w = Worker(client, lease=timedelta(seconds=1), wait=timedelta(milliseconds=200), on_error=errors.append,
               shutdown_timeout=timedelta(milliseconds=300))
    w.handle(queue, "hang", hang)
    res = await client.enqueue(EnqueueRequest(queue, "hang"))
    async with w:
        await asyncio.wait_for(started.wait(), 20)
        proc = await asyncio.create_subprocess_exec(str(binary), "jobs", "cancel", str(res.job_id),
                                                    "--addr", ",".join(n.grpc for n in cluster.nodes))
        assert await proc.wait() == 0
        await until(lambda: _true(bool(cancelled)))
    assert cancelled == ["job cancelled by an operator"]
    assert any(isinstance(e, JobCancelled) for e in errors), errors
    assert not any(isinstance(e, LeaseLost) and not isinstance(e, JobCancelled) for e in errors), errors


async def _true(v: bool) -> bool:
    return v


async def test_handler_result_completes_the_job(client: SeppClient) -> None:
    # A queue that keeps completed jobs: the handler's bytes are the job's
    # result, read back by wait_job and get_job.
    queue = q()
    await client.create_queue(queue, QueueSettings(completed_retention=timedelta(minutes=5)))
    errors: list[BaseException] = []

    async def resize(d: Delivery) -> Optional[bytes]:
        return b'{"width":320}'

    async def plain(d: Delivery) -> None:
        pass

    wrapped: list[int] = []

    async def around(d: Delivery, run: Callable[[], Awaitable[None]]) -> None:
        # A tracing hook's shape: the result still reaches the ack.
        wrapped.append(d.job.id)
        await run()

    w = Worker(client, wait=timedelta(milliseconds=200), on_error=errors.append, around_handler=around)
    w.handle(queue, "resize", resize)
    w.handle(queue, "plain", plain)
    res = await client.enqueue(EnqueueRequest(queue, "resize"))
    other = await client.enqueue(EnqueueRequest(queue, "plain"))
    async with w:
        async with asyncio.timeout(20):
            out = await client.wait_job(res.job_id)
            plain_out = await client.wait_job(other.job_id)
    assert (out.terminal, out.state, out.result) == (True, JobState.COMPLETED, b'{"width":320}')
    job = await client.get_job(res.job_id)
    assert (job.state, job.result, job.attempt, job.worker_id) == (JobState.COMPLETED, b'{"width":320}', 1, w.id)
    assert (plain_out.state, plain_out.result) == (JobState.COMPLETED, b"")
    assert sorted(wrapped) == sorted([res.job_id, other.job_id])
    assert errors == []


async def test_refused_result_is_reported_and_the_job_acked(client: SeppClient) -> None:
    # A queue that keeps no completed jobs refuses a result: on_error gets
    # the WrongState and the job is acked without it, run once.
    queue = q()
    errors: list[BaseException] = []
    runs: list[int] = []

    async def resize(d: Delivery) -> bytes:
        runs.append(d.ctx.attempt)
        return b"nowhere to keep it"

    w = Worker(client, wait=timedelta(milliseconds=200), on_error=errors.append)
    w.handle(queue, "resize", resize)
    res = await client.enqueue(EnqueueRequest(queue, "resize"))
    async with w:
        await until(lambda: _acked(client, queue, 1))
    assert runs == [1]
    assert [type(e) for e in errors] == [WrongState], errors
    assert f"job {res.job_id}: result refused" in "".join(getattr(errors[0], "__notes__", []))
    with pytest.raises(NotFound):  # acked and, on this queue, not kept
        await client.get_job(res.job_id)


async def test_oversized_result_is_reported_and_the_job_runs_again(client: SeppClient) -> None:
    # A result over max_result_bytes is InvalidArgument (an InvalidField
    # naming "result"): reported, the job is not acked, and it comes back
    # once its lease expires, as with the Go worker.
    queue = q()
    await client.create_queue(queue, QueueSettings(completed_retention=timedelta(minutes=5)))
    limit = (await client.server_info()).limits.max_result_bytes
    assert limit > 0
    errors: list[BaseException] = []
    runs: list[int] = []

    async def resize(d: Delivery) -> bytes:
        runs.append(d.ctx.attempt)
        return b"x" * (limit + 1) if d.ctx.attempt == 1 else b"small"

    w = Worker(client, lease=timedelta(seconds=1), wait=timedelta(milliseconds=200), on_error=errors.append)
    w.handle(queue, "resize", resize)
    res = await client.enqueue(EnqueueRequest(queue, "resize", max_attempts=3))
    async with w:
        async with asyncio.timeout(20):
            out = await client.wait_job(res.job_id)
    assert (out.state, out.result) == (JobState.COMPLETED, b"small")
    assert runs == [1, 2]
    refused = [e for e in errors if isinstance(e, InvalidField)]
    assert len(refused) == 1 and refused[0].field == "result", errors
    job = await client.get_job(res.job_id)
    assert (job.attempt, [h.outcome for h in job.history]) == (2, ["lease_expired"])


async def test_handler_reports_progress(client: SeppClient) -> None:
    # delivery.progress rides on the worker's lease extension: get_job shows
    # it while the handler runs, and the ack clears it. Bad input raises
    # InvalidField at the call and sends nothing.
    queue = q()
    await client.create_queue(queue, QueueSettings(completed_retention=timedelta(minutes=5)))
    errors: list[BaseException] = []
    bad: list[InvalidField] = []
    running = asyncio.Event()
    finish = asyncio.Event()

    async def export(d: Delivery) -> None:
        for pct, msg in [(101, ""), (-1, ""), (50, "é" * 129)]:
            try:
                d.progress(pct, msg)
            except InvalidField as e:
                bad.append(e)
        running.set()
        d.progress(10, "starting")
        d.progress(40, "exported 4000 of 10000 rows")  # only the latest is sent
        await finish.wait()

    w = Worker(client, wait=timedelta(milliseconds=200), on_error=errors.append,
               progress_interval=timedelta(milliseconds=100))
    w.handle(queue, "export", export)
    res = await client.enqueue(EnqueueRequest(queue, "export"))
    async with w:
        async with asyncio.timeout(20):
            await running.wait()

        async def reported() -> bool:
            return (await client.get_job(res.job_id)).progress == Progress(40, "exported 4000 of 10000 rows")

        await until(reported)
        job = await client.get_job(res.job_id)
        assert job.state == JobState.RESERVED
        finish.set()
        async with asyncio.timeout(20):
            out = await client.wait_job(res.job_id)
    assert out.state == JobState.COMPLETED
    assert (await client.get_job(res.job_id)).progress is None
    assert [e.field for e in bad] == ["progress.percent", "progress.percent", "progress.message"]
    assert errors == []


async def test_progress_outside_a_worker(client: SeppClient) -> None:
    queue = q()
    await client.enqueue(EnqueueRequest(queue, "t"))
    [d] = await client.reserve(queue, max=1, wait=timedelta(seconds=5))
    with pytest.raises(RuntimeError, match="outside a Worker"):
        d.progress(10)
    with pytest.raises(InvalidField):
        d.progress(101)
    assert (await client.get_job(d.job.id)).progress is None
    await client.ack(d.ctx)


async def test_refused_progress_is_dropped_and_the_lease_extended(client: SeppClient,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # While some member does not keep progress yet the server refuses it
    # (WrongState, feature=progress) and extends nothing: the worker drops
    # the report, extends without it, and reports the refusal once per
    # delivery. The refusal is stood in for here; the extension is real.
    queue = q()
    errors: list[BaseException] = []
    refusals: list[int] = []
    plain: list[int] = []
    refused = asyncio.Event()
    extended = asyncio.Event()
    extend_lease = client.extend_lease

    async def refuse(ctx: JobContext, percent: int, message: str = "",
                     lease: Optional[timedelta] = None) -> Optional[datetime]:
        refusals.append(percent)
        refused.set()
        raise WrongState("VERSION feature=progress: not every member applies it yet", op="report progress")

    async def extend(ctx: JobContext, lease: Optional[timedelta] = None) -> Optional[datetime]:
        at = await extend_lease(ctx, lease)
        plain.append(ctx.job_id)
        extended.set()
        return at

    monkeypatch.setattr(client, "report_progress", refuse)
    monkeypatch.setattr(client, "extend_lease", extend)

    async def export(d: Delivery) -> None:
        for pct in (10, 20):
            refused.clear()
            extended.clear()
            d.progress(pct, "rows")
            await refused.wait()
            await extended.wait()

    w = Worker(client, wait=timedelta(milliseconds=200), on_error=errors.append,
               progress_interval=timedelta(milliseconds=50))
    w.handle(queue, "export", export)
    res = await client.enqueue(EnqueueRequest(queue, "export"))
    async with w:
        async def acked() -> bool:
            return (await counts(client, queue))[3] == 1
        async with asyncio.timeout(20):
            await until(acked)
    assert refusals == [10, 20]
    assert len(plain) >= 2 and set(plain) == {res.job_id}
    assert [type(e) for e in errors] == [WrongState], errors


async def test_handler_follow_ups_are_enqueued_with_the_ack(client: SeppClient) -> None:
    # A handler returning a Completion enqueues its follow-ups with its
    # ack: a chain of steps. A refused follow-up (a unique key another job
    # holds, with refuse) leaves the job uncompleted: reported, nacked, run
    # again (this time without it).
    queue = q()
    await client.enqueue(EnqueueRequest(queue, "holder", unique=UniqueOptions(key="taken"),
                                        scheduled_at=datetime.now(timezone.utc) + timedelta(hours=1)))
    errors: list[BaseException] = []
    runs: list[int] = []
    done: asyncio.Queue[bytes] = asyncio.Queue()

    async def step1(d: Delivery) -> Completion:
        runs.append(d.ctx.attempt)
        follow_ups = [EnqueueRequest(queue, "step-2", b"from step 1")]
        if d.ctx.attempt == 1:
            follow_ups.append(EnqueueRequest(queue, "t", unique=UniqueOptions(key="taken", refuse=True)))
        return Completion(follow_ups=follow_ups)

    async def step2(d: Delivery) -> None:
        await done.put(d.job.payload)

    w = Worker(client, wait=timedelta(milliseconds=200), on_error=errors.append)
    w.handle(queue, "step-1", step1)
    w.handle(queue, "step-2", step2)
    await client.enqueue(EnqueueRequest(queue, "step-1"))
    async with w:
        async with asyncio.timeout(20):
            assert await done.get() == b"from step 1"
    assert runs == [1, 2]
    assert done.empty()
    assert len(errors) == 1 and isinstance(errors[0], AlreadyExists), errors
    assert "follow-ups refused" in "".join(getattr(errors[0], "__notes__", []))
