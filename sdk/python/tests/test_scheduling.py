"""Unique jobs, expiry and periodic schedules against the real cluster."""

from __future__ import annotations

import asyncio
import secrets
import time
from datetime import datetime, timedelta, timezone
from typing import Awaitable, Callable, Optional, TypeVar

import grpc
import pytest

from sepp import (AlreadyExists, DeadLetterCause, DeadLetterRecord, Delivery, EnqueueRequest, InvalidField, JobState,
                  JobTemplate, NotFound, Schedule, ScheduleDefinition, ScheduleOverlap, SeppClient, UniqueConflict,
                  UniqueOptions)

T = TypeVar("T")


def q() -> str:
    """A queue of the test's own, so tests do not see each other's jobs."""
    return "t-" + secrets.token_hex(4)


def name() -> str:
    return "s-" + secrets.token_hex(4)


async def poll(what: str, fn: Callable[[], Awaitable[Optional[T]]], timeout: float = 30.0) -> T:
    """fn's first non-None answer; fails the test after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = await fn()
        if v is not None:
            return v
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def reserve_one(client: SeppClient, queue: str, timeout: float = 30.0) -> Delivery:
    """The next delivery of queue, long-polling up to timeout."""
    async def once() -> Optional[Delivery]:
        ds = await client.reserve(queue, wait=timedelta(seconds=1))
        return ds[0] if ds else None

    return await poll(f"a job on {queue}", once, timeout)


# -- unique jobs --------------------------------------------------------------


async def test_unique_key_returns_the_first_job(client: SeppClient) -> None:
    queue = q()
    u = UniqueOptions(key="sync-" + secrets.token_hex(4))
    first = await client.enqueue(EnqueueRequest(queue, "sync", unique=u))
    again = await client.enqueue(EnqueueRequest(queue, "sync", b"other payload", unique=u))
    assert first.duplicate is False
    assert (again.job_id, again.duplicate) == (first.job_id, True)
    # Another queue does not share the key.
    elsewhere = await client.enqueue(EnqueueRequest(q(), "sync", unique=u))
    assert elsewhere.duplicate is False and elsewhere.job_id != first.job_id
    jobs, _ = await client.list_jobs(queue, state=JobState.READY)
    assert [j.id for j in jobs] == [first.job_id]

    # Once the holder is acked (no completed_for), the key is free again.
    (d,) = await client.reserve(queue)
    assert d.job.id == first.job_id
    await client.ack(d.ctx)
    fresh = await client.enqueue(EnqueueRequest(queue, "sync", unique=u))
    assert fresh.duplicate is False and fresh.job_id != first.job_id


async def test_unique_key_derived_from_type_payload_and_fields(client: SeppClient) -> None:
    queue = q()
    u = UniqueOptions(fields=["tenant"])

    def req(payload: bytes, tenant: str, other: str) -> EnqueueRequest:
        return EnqueueRequest(queue, "report", payload, custom={"tenant": tenant, "trace": other}, unique=u)

    first = await client.enqueue(req(b"p", "acme", "1"))
    same = await client.enqueue(req(b"p", "acme", "2"))  # trace is not part of the key
    other_tenant = await client.enqueue(req(b"p", "globex", "1"))
    other_payload = await client.enqueue(req(b"q", "acme", "1"))
    assert (same.job_id, same.duplicate) == (first.job_id, True)
    assert other_tenant.duplicate is False and other_payload.duplicate is False
    assert len({first.job_id, other_tenant.job_id, other_payload.job_id}) == 3


async def test_unique_refuse_raises_unique_conflict_naming_the_holder(client: SeppClient) -> None:
    queue, key = q(), "k-" + secrets.token_hex(4)
    first = await client.enqueue(EnqueueRequest(queue, "charge", unique=UniqueOptions(key=key)))
    with pytest.raises(UniqueConflict) as e:
        await client.enqueue(EnqueueRequest(queue, "charge", unique=UniqueOptions(key=key, refuse=True)))
    assert isinstance(e.value, AlreadyExists)
    assert (e.value.job_id, e.value.queue, e.value.code) == (first.job_id, queue, grpc.StatusCode.ALREADY_EXISTS)
    assert str(first.job_id) in str(e.value)
    jobs, _ = await client.list_jobs(queue, state=JobState.READY)
    assert [j.id for j in jobs] == [first.job_id]


async def test_unique_in_the_batch_path(client: SeppClient) -> None:
    queue, key = q(), "b-" + secrets.token_hex(4)
    first = await client.enqueue(EnqueueRequest(queue, "x", unique=UniqueOptions(key=key)))
    results = await client.enqueue_batch([
        EnqueueRequest(queue, "x", unique=UniqueOptions(key=key)),
        EnqueueRequest(queue, "x", unique=UniqueOptions(key=key, refuse=True)),
        EnqueueRequest(queue, "x", unique=UniqueOptions(key=key + "-other"), ttl=timedelta(minutes=5)),
    ])
    assert results[0].result is not None
    assert (results[0].result.job_id, results[0].result.duplicate) == (first.job_id, True)
    assert isinstance(results[1].error, UniqueConflict) and results[1].error.job_id == first.job_id
    assert results[2].result is not None and results[2].result.duplicate is False
    job = await client.get_job(results[2].result.job_id)
    assert job.expires_at is not None


async def test_unique_through_the_producer(client: SeppClient) -> None:
    queue, key = q(), "p-" + secrets.token_hex(4)
    async with client.producer(linger=timedelta(milliseconds=20)) as producer:
        first = await producer.enqueue(EnqueueRequest(queue, "x", unique=UniqueOptions(key=key)))
        again = await producer.enqueue(EnqueueRequest(queue, "x", unique=UniqueOptions(key=key)))
        with pytest.raises(UniqueConflict) as e:
            await producer.enqueue(EnqueueRequest(queue, "x", unique=UniqueOptions(key=key, refuse=True)))
    assert (again.job_id, again.duplicate, first.duplicate) == (first.job_id, True, False)
    assert e.value.job_id == first.job_id


async def test_unique_completed_for_holds_the_key_after_the_ack(client: SeppClient) -> None:
    queue, key = q(), "c-" + secrets.token_hex(4)
    u = UniqueOptions(key=key, completed_for=timedelta(minutes=5))
    first = await client.enqueue(EnqueueRequest(queue, "x", unique=u))
    (d,) = await client.reserve(queue)
    await client.ack(d.ctx)
    again = await client.enqueue(EnqueueRequest(queue, "x", unique=u))
    assert (again.job_id, again.duplicate) == (first.job_id, True)


def test_unique_and_expiry_refused_client_side() -> None:
    with pytest.raises(InvalidField) as e:
        EnqueueRequest("emails", "x", ttl=timedelta(microseconds=500))
    assert (e.value.field, e.value.limit) == ("ttl_ms", ">= 1ms")
    with pytest.raises(InvalidField) as e:
        EnqueueRequest("emails", "x", ttl=timedelta(seconds=-1))
    assert e.value.field == "ttl_ms"
    with pytest.raises(InvalidField) as e:
        EnqueueRequest("emails", "x", expires_at=datetime.now() + timedelta(minutes=1))
    assert e.value.field == "expires_at"
    with pytest.raises(InvalidField) as e:
        EnqueueRequest("emails", "x", unique=UniqueOptions(completed_for=timedelta(seconds=-1)))
    assert e.value.field == "unique.completed_for"
    # Both deadlines at once are the server's business (the earliest applies).
    m = EnqueueRequest("emails", "x", ttl=timedelta(seconds=2, microseconds=1500),
                       expires_at=datetime.now(timezone.utc) + timedelta(minutes=1),
                       unique=UniqueOptions(key="k", fields=(), completed_for=timedelta(seconds=1))).to_proto("key")
    assert (m.ttl_ms, m.unique.key, m.unique.completed_for_ms, m.HasField("expires_at")) == (2001, "k", 1000, True)


async def test_server_refuses_a_past_expires_at_naming_the_field(client: SeppClient) -> None:
    with pytest.raises(InvalidField) as e:
        await client.enqueue(EnqueueRequest(q(), "x", expires_at=datetime.now(timezone.utc) - timedelta(minutes=1)))
    assert e.value.field == "expires_at"
    with pytest.raises(InvalidField) as e:
        await client.enqueue(EnqueueRequest("near", "x", unique=UniqueOptions(completed_for=timedelta(hours=1))))
    assert e.value.field.startswith("unique.completed_for")


# -- expiry -------------------------------------------------------------------


async def test_ttl_job_nobody_reserves_is_dead_lettered_expired(client: SeppClient) -> None:
    queue = q()
    keeper = await client.enqueue(EnqueueRequest(queue, "keep", ttl=timedelta(minutes=10)))
    before = datetime.now(timezone.utc)
    res = await client.enqueue(EnqueueRequest(queue, "stale", ttl=timedelta(milliseconds=200)))

    async def dead() -> Optional[DeadLetterRecord]:
        try:
            return await client.get_dead_letter(res.job_id)
        except NotFound:
            return None

    rec = await poll("the ttl job's dead letter", dead)
    assert rec.cause == DeadLetterCause.EXPIRED
    # Dead at its deadline (the servers run on the test's host, on its clock), not before.
    assert rec.failed_at is not None
    assert before + timedelta(milliseconds=150) < rec.failed_at < before + timedelta(seconds=10)
    # The other job's deadline is far off: it is still there to reserve.
    job = await client.get_job(keeper.job_id)
    assert job.expires_at is not None and job.expires_at > datetime.now(timezone.utc) + timedelta(minutes=9)
    (d,) = await client.reserve(queue)
    assert d.job.id == keeper.job_id
    await client.ack(d.ctx)


async def test_expires_at_job_is_dead_lettered_expired(client: SeppClient) -> None:
    # Far enough ahead that a slow first call (finding the leader on a
    # loaded machine) still reaches the server before it.
    at = datetime.now(timezone.utc) + timedelta(seconds=2)
    res = await client.enqueue(EnqueueRequest(q(), "stale", expires_at=at))
    job = await client.get_job(res.job_id)
    assert job.expires_at is not None and abs(job.expires_at - at) < timedelta(milliseconds=1)

    async def dead() -> Optional[DeadLetterRecord]:
        try:
            return await client.get_dead_letter(res.job_id)
        except NotFound:
            return None

    rec = await poll("the expired job's dead letter", dead)
    assert rec.cause == DeadLetterCause.EXPIRED


# -- schedules ----------------------------------------------------------------


async def test_schedule_lifecycle(client: SeppClient) -> None:
    queue, sname = q(), name()
    d = ScheduleDefinition(sname, JobTemplate(queue, "tick", b"hello", priority=7, custom={"tenant": "acme"},
                                              max_attempts=3),
                           interval=timedelta(seconds=1), overlap=ScheduleOverlap.ALLOW)
    created = await client.create_schedule(d)
    assert created.name == sname and created.paused is False
    assert created.definition.interval == timedelta(seconds=1)
    assert created.definition.template == d.template
    assert created.created_at is not None

    # A tick fires a job that a reserve receives.
    got = await reserve_one(client, queue)
    assert (got.job.job_type, got.job.payload, got.job.priority) == ("tick", b"hello", 7)
    assert got.job.custom["sepp_schedule"] == sname and got.job.custom["tenant"] == "acme"
    assert got.ctx.max_attempts == 3
    await client.ack(got.ctx)

    s = await client.get_schedule(sname, next_fire_times=3)
    assert s.fired >= 1 and s.last_fire_time is not None and s.last_job_id != 0
    assert len(s.next_fire_times) == 3
    assert list(s.next_fire_times) == sorted(s.next_fire_times)
    assert all(t.microsecond == 0 for t in s.next_fire_times)  # multiples of 1s since the epoch
    assert s.next_fire_times[0] > s.last_fire_time

    assert sname in [x.name for x in await client.list_schedules()]
    with pytest.raises(AlreadyExists) as e:
        await client.create_schedule(d)
    assert not isinstance(e.value, UniqueConflict)

    # Paused: no next fire times, and the counters stand still.
    paused = await client.pause_schedule(sname)
    assert paused.paused is True and paused.next_fire_times == ()
    while ds := await client.reserve(queue, max=100):  # what fired before the pause
        await client.ack_batch([x.ctx for x in ds])
    assert await client.reserve(queue, wait=timedelta(seconds=2.5)) == []
    still = await client.get_schedule(sname)
    assert (still.paused, still.fired, still.skipped, still.last_fire_time, still.next_fire_times) == (
        True, paused.fired, paused.skipped, paused.last_fire_time, ())

    # Updated while paused: the new definition, still paused, nothing lost.
    upd = await client.update_schedule(ScheduleDefinition(sname, JobTemplate(queue, "tock"),
                                                          interval=timedelta(seconds=3)))
    assert upd.paused is True
    assert (upd.definition.interval, upd.definition.template.job_type) == (timedelta(seconds=3), "tock")
    assert upd.fired == paused.fired and upd.last_fire_time == paused.last_fire_time

    # Resumed: it fires again, from a tick after now, on the new interval.
    before = datetime.now(timezone.utc)
    resumed = await client.resume_schedule(sname)
    assert resumed.paused is False and resumed.next_fire_times
    assert all(int(t.timestamp()) % 3 == 0 and t.microsecond == 0 for t in resumed.next_fire_times)
    assert resumed.next_fire_times[0] > before - timedelta(seconds=1)
    got = await reserve_one(client, queue)
    assert got.job.job_type == "tock" and got.job.custom["sepp_schedule"] == sname
    tick_ns = int(got.job.custom["sepp_schedule_tick"])
    assert tick_ns % 3_000_000_000 == 0
    assert paused.last_fire_time is not None and tick_ns > int(paused.last_fire_time.timestamp()) * 10**9
    await client.ack(got.ctx)

    await client.delete_schedule(sname)
    with pytest.raises(NotFound):
        await client.get_schedule(sname)
    with pytest.raises(NotFound):
        await client.delete_schedule(sname)
    with pytest.raises(NotFound):
        await client.update_schedule(d)
    assert sname not in [x.name for x in await client.list_schedules()]


async def test_cron_schedule_in_a_time_zone_created_paused(client: SeppClient) -> None:
    sname = name()
    d = ScheduleDefinition(sname, JobTemplate(q(), "nightly"), cron="30 2 * * *", time_zone="Europe/Berlin",
                           paused=True)
    s = await client.create_schedule(d)
    try:
        assert (s.paused, s.next_fire_times, s.definition.cron, s.definition.time_zone) == (
            True, (), "30 2 * * *", "Europe/Berlin")
        assert s.definition.interval is None
        assert (await client.resume_schedule(sname)).paused is False
        r = await client.get_schedule(sname, next_fire_times=4)
        assert len(r.next_fire_times) == 4
        berlin = timezone(timedelta(hours=1)), timezone(timedelta(hours=2))
        for t in r.next_fire_times:
            # 02:30 Berlin time: 01:30 UTC in winter, 00:30 UTC in summer.
            assert (t.minute, t.second) == (30, 0) and any(t.astimezone(z).hour == 2 for z in berlin)
        gaps = [b - a for a, b in zip(r.next_fire_times, r.next_fire_times[1:])]
        assert all(timedelta(hours=23) <= g <= timedelta(hours=25) for g in gaps)
    finally:
        await client.delete_schedule(sname)


@pytest.mark.parametrize("bad,field", [
    (dict(cron="not a cron"), "cron"),
    (dict(cron="61 * * * *"), "cron"),
    (dict(interval=timedelta(milliseconds=100)), "interval"),
    (dict(cron="* * * * *", interval=timedelta(seconds=5)), "interval"),
    (dict(), "cron"),
    (dict(cron="* * * * *", time_zone="Mars/Olympus_Mons"), "time_zone"),
])
async def test_bad_schedule_is_invalid_field(client: SeppClient, bad: dict[str, object], field: str) -> None:
    sname = name()
    d = ScheduleDefinition(sname, JobTemplate(q(), "x"), **bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidField) as e:
        await client.create_schedule(d)
    assert e.value.field == field, e.value
    with pytest.raises(NotFound):
        await client.get_schedule(sname)


async def test_bad_schedule_template_and_name(client: SeppClient) -> None:
    with pytest.raises(InvalidField) as e:
        await client.create_schedule(ScheduleDefinition(name(), JobTemplate("", "x"), interval=timedelta(seconds=5)))
    assert e.value.field == "template.queue"
    with pytest.raises(InvalidField) as e:
        await client.create_schedule(ScheduleDefinition("", JobTemplate(q(), "x"), interval=timedelta(seconds=5)))
    assert e.value.field == "name"
    with pytest.raises(InvalidField) as e:
        await client.get_schedule("whatever", next_fire_times=101)
    assert e.value.field == "next_fire_times"


def test_schedule_from_proto_round_trip() -> None:
    d = ScheduleDefinition("nightly", JobTemplate("reports", "build", b"p", priority=0, custom={"a": "b"}),
                           interval=timedelta(minutes=5), overlap=ScheduleOverlap.ALLOW)
    s = Schedule.from_proto(d.to_proto())
    assert s.definition == d
    assert (s.next_fire_times, s.last_fire_time, s.fired, s.created_at) == ((), None, 0, None)
    unset = Schedule.from_proto(ScheduleDefinition("x", JobTemplate("q", "t")).to_proto())
    assert unset.definition.template.priority is None and unset.definition.interval is None
