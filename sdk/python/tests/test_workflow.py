"""Job dependencies against the real cluster: a workflow in one batch (a
root, a fan-out after it, a callback after the fan-out that runs whatever
its parents did and reads their results), follow-ups that wait for each
other, a dependent cancelled with its parent, and the whole-batch rule."""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta

import pytest

from sepp import (Completion, DeadLetterCause, Delivery, EnqueueRequest, InvalidField, Job, JobParent, JobState,
                  ParentFailure, ParentResult, Permanent, QueueSettings, RetryDirective, SeppClient, UniqueConflict,
                  UniqueOptions, Worker)


def q(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


async def test_workflow_fan_out_and_a_callback_reading_its_parents(
        client: SeppClient, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = q("tiles")
    # The callback reads its parents' results: the queue keeps completed jobs.
    await client.create_queue(queue, QueueSettings(completed_retention=timedelta(hours=1)))

    # docs:begin workflow
    res = await client.enqueue_batch([
        EnqueueRequest(queue, "plan"),                                     # 0
        EnqueueRequest(queue, "render", b"a", after=[0]),                  # 1
        EnqueueRequest(queue, "render", b"b", after=[0]),                  # 2
        EnqueueRequest(queue, "render", b"c", after=[0]),                  # 3
        EnqueueRequest(queue, "stitch", after=[1, 2, 3],                   # 4
                       on_parent_failure=ParentFailure.RUN),
    ])  # applied whole: a refused item raises, and nothing is enqueued
    jobs = [r.result for r in res if r.result is not None]  # so each item has its result
    print(jobs[0].state, jobs[4].state)  # ready blocked
    # docs:end workflow
    assert len(jobs) == 5
    ids = [j.job_id for j in jobs]
    assert [j.state for j in jobs] == [JobState.READY] + [JobState.BLOCKED] * 4

    # Blocked before the root runs: not reservable, counted, listed, and
    # showing what each waits for.
    stitch = await client.get_job(ids[4])
    assert (stitch.state, stitch.on_parent_failure) == (JobState.BLOCKED, ParentFailure.RUN)
    assert stitch.parents == tuple(JobParent(i, JobState.BLOCKED, DeadLetterCause.UNKNOWN, False) for i in ids[1:4])
    render = await client.get_job(ids[1])
    assert (render.state, render.on_parent_failure) == (JobState.BLOCKED, ParentFailure.CANCEL)
    assert render.parents == (JobParent(ids[0], JobState.READY, DeadLetterCause.UNKNOWN, False),)
    # And the other way: get_job shows the jobs still waiting for a job.
    plan_job = await client.get_job(ids[0])
    assert (plan_job.waiting_children, plan_job.waiting_children_total) == (tuple(ids[1:4]), 3)
    assert (render.waiting_children, render.waiting_children_total) == ((ids[4],), 1)
    assert (stitch.waiting_children, stitch.waiting_children_total) == ((), 0)
    stats = (await client.get_queue(queue)).stats
    assert (stats.ready, stats.blocked) == (1, 4)
    listed, _ = await client.list_jobs(queue, state=JobState.BLOCKED)
    assert [j.id for j in listed] == ids[1:]
    # A listing leaves them out.
    assert [(j.waiting_children, j.waiting_children_total) for j in listed] == [((), 0)] * 4

    seen: asyncio.Future[list[ParentResult]] = asyncio.get_running_loop().create_future()
    render_parents: list[tuple[JobParent, ...]] = []

    async def plan(d: Delivery) -> None:
        return None

    async def render_tile(d: Delivery) -> bytes:
        render_parents.append(d.job.parents)
        if d.job.payload == b"b":
            raise Permanent("bad tile")  # dead-lettered: the callback runs all the same
        return b"tile " + d.job.payload

    # docs:begin workflow-callback
    async def stitch_tiles(d: Delivery) -> bytes:
        # d.job.parents: the jobs it ran after, each with its state
        # (COMPLETED or DEAD), a dead one's cause, and ended.
        parents = await client.parent_results(d.job.parents)
        seen.set_result(parents)
        tiles = [p.result for p in parents if p.kept]  # the completed ones' results
        failed = [p.job_id for p in parents if p.state != JobState.COMPLETED]
        return b"|".join(tiles) + f" ({len(failed)} failed)".encode()
    # docs:end workflow-callback

    # What the callback's delivery carried, and get_job's and list_jobs'
    # job while it runs (a completed job no longer holds its parents).
    stitch_parents: list[tuple[JobParent, ...]] = []
    stitch_got: list[tuple[JobParent, ...]] = []
    stitch_listed: list[tuple[JobParent, ...]] = []
    get_job = client.get_job

    async def stitch_seen(d: Delivery) -> bytes:
        stitch_parents.append(d.job.parents)
        stitch_got.append((await get_job(d.ctx.job_id)).parents)
        listed, _ = await client.list_jobs(queue, state=JobState.RESERVED)
        stitch_listed.extend(j.parents for j in listed if j.id == d.ctx.job_id)
        return await stitch_tiles(d)

    # Count the client's get_job calls: the delivery carries the results.
    got_jobs: list[int] = []

    async def counting_get_job(job_id: int, *, stale: bool = False) -> Job:
        got_jobs.append(job_id)
        return await get_job(job_id, stale=stale)
    monkeypatch.setattr(client, "get_job", counting_get_job)

    w = Worker(client, wait=timedelta(milliseconds=200))
    w.handle(queue, "plan", plan)
    w.handle(queue, "render", render_tile)
    w.handle(queue, "stitch", stitch_seen)
    async with w:
        parents = await asyncio.wait_for(seen, 30)
        outcome = await asyncio.wait_for(client.wait_job(ids[4]), 30)

    # The callback's delivery carried its completed parents' results, so
    # parent_results read none of them with get_job; the dead one has none.
    assert stitch_parents == [(
        JobParent(ids[1], JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True, result=b"tile a"),
        JobParent(ids[2], JobState.DEAD, DeadLetterCause.REJECTED, True),
        JobParent(ids[3], JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True, result=b"tile c"),
    )]
    assert got_jobs == []
    assert parents == [
        ParentResult(ids[1], JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, b"tile a", True, result_kept=True),
        ParentResult(ids[2], JobState.DEAD, DeadLetterCause.REJECTED, True, b"", False),
        ParentResult(ids[3], JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, b"tile c", True, result_kept=True),
    ]
    assert (outcome.state, outcome.result) == (JobState.COMPLETED, b"tile a|tile c (1 failed)")
    # Each render ran once its plan had completed (kept, with no result).
    assert sorted(render_parents, key=lambda ps: ps[0].job_id) == [
        (JobParent(ids[0], JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True),)] * 3
    # get_job's job carries them too; list_jobs' does not, and
    # parent_results then reads the completed ones with get_job.
    assert stitch_got == stitch_parents
    (listed_parents,) = stitch_listed
    assert [(p.job_id, p.state, p.result_kept) for p in listed_parents] == [
        (ids[1], JobState.COMPLETED, False), (ids[2], JobState.DEAD, False), (ids[3], JobState.COMPLETED, False)]
    assert [(p.result, p.kept) for p in await client.parent_results(listed_parents)] == [
        (b"tile a", True), (b"", False), (b"tile c", True)]
    assert got_jobs == [ids[1], ids[3]]
    stats = (await client.get_queue(queue)).stats
    assert (stats.blocked, stats.ready, stats.reserved) == (0, 0, 0)
    # Each parent ended and released its children: none wait any more.
    for done in (await get_job(ids[0]), await get_job(ids[1])):
        assert (done.state, done.waiting_children, done.waiting_children_total) == (JobState.COMPLETED, (), 0)


async def test_parent_results_of_a_queue_that_keeps_no_completed_jobs(client: SeppClient) -> None:
    queue = q("wf-nokeep")
    res = await client.enqueue_batch([EnqueueRequest(queue, "a"), EnqueueRequest(queue, "b", after=[0])])
    assert all(r.ok for r in res)
    (a,) = await client.reserve(queue, wait=timedelta(seconds=5))
    await client.ack(a.ctx)
    (b,) = await client.reserve(queue, wait=timedelta(seconds=5))
    assert b.job.parents == (JobParent(a.ctx.job_id, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True),)
    # Completed, but its record is gone: no result, not kept.
    assert await client.parent_results(b.job.parents) == [
        ParentResult(a.ctx.job_id, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, b"", False)]
    await client.ack(b.ctx)


async def test_cancel_policy_dead_letters_the_dependents(client: SeppClient) -> None:
    queue = q("wf-cancel")
    res = await client.enqueue_batch([
        EnqueueRequest(queue, "a"), EnqueueRequest(queue, "b", after=[0]), EnqueueRequest(queue, "c", after=[1]),
        EnqueueRequest(queue, "d"), EnqueueRequest(queue, "e", after=[3]),
    ])
    a, b, c, d, e = (r.result.job_id for r in res if r.result is not None)
    got = {x.ctx.job_id: x for x in await client.reserve(queue, max=2, wait=timedelta(seconds=5))}
    assert sorted(got) == [a, d]
    # Dead-lettered: b is cancelled at once, and c after it.
    assert await client.nack(got[a].ctx, RetryDirective.dead_letter(), "broken") is True
    rb, rc = await client.get_dead_letter(b), await client.get_dead_letter(c)
    assert (rb.cause, rb.last_reason) == (DeadLetterCause.CANCELLED, f"parent job {a} was dead-lettered (rejected)")
    assert (rc.cause, rc.last_reason) == (DeadLetterCause.CANCELLED,
                                          f"parent job {b} was dead-lettered (cancelled)")
    # A parent removed before it completed cancels its dependent too.
    await client.release(got[d].ctx)
    assert all(r.ok for r in await client.delete_jobs([d]))
    re_ = await client.get_dead_letter(e)
    assert re_.cause == DeadLetterCause.CANCELLED
    assert re_.last_reason == f"parent job {d} was removed before it completed"


async def test_follow_ups_that_wait_for_each_other(client: SeppClient) -> None:
    queue = q("wf-follow")
    await client.enqueue(EnqueueRequest(queue, "start"))
    (d,) = await client.reserve(queue, wait=timedelta(seconds=5))
    follow = await client.ack_with_follow_ups(d.ctx, [
        EnqueueRequest(queue, "extract"),
        EnqueueRequest(queue, "load", after=[0]),
    ])
    extract, load = follow
    assert (extract.state, load.state) == (JobState.READY, JobState.BLOCKED)
    assert (await client.get_job(load.job_id)).parents[0].job_id == extract.job_id

    # And from a Worker's Completion: the follow-ups go with the ack.
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def step(dl: Delivery) -> Completion | None:
        if dl.job.job_type == "extract":
            return Completion(follow_ups=[EnqueueRequest(queue, "x"), EnqueueRequest(queue, "y", after=[0])])
        if dl.job.job_type == "y":
            assert dl.job.parents[0].state == JobState.COMPLETED
            done.set_result(dl.ctx.job_id)
        return None

    w = Worker(client, wait=timedelta(milliseconds=200))
    w.handle(queue, "", step)
    async with w:
        await asyncio.wait_for(done, 30)


async def test_a_batch_with_dependencies_goes_whole_or_not_at_all(client: SeppClient) -> None:
    queue = q("wf-whole")
    # An index that is not earlier: the server names it, and enqueues nothing.
    with pytest.raises(InvalidField) as e:
        await client.enqueue_batch([EnqueueRequest(queue, "a", after=[1]), EnqueueRequest(queue, "b")])
    assert e.value.field == "jobs[0].after[0]"

    held = UniqueOptions(key="held", refuse=True)
    await client.enqueue(EnqueueRequest(queue, "holder", unique=held))
    # Without dependencies a refused item fails alone...
    res = await client.enqueue_batch([EnqueueRequest(queue, "a"), EnqueueRequest(queue, "b", unique=held)])
    assert res[0].ok and isinstance(res[1].error, UniqueConflict)
    # ...with them the whole call fails, and neither job exists.
    with pytest.raises(UniqueConflict):
        await client.enqueue_batch([EnqueueRequest(queue, "c"), EnqueueRequest(queue, "d", unique=held, after=[0])])
    stats = (await client.get_queue(queue)).stats
    assert (stats.ready, stats.blocked) == (2, 0)

    # A lone enqueue cannot wait for anything.
    with pytest.raises(InvalidField) as e:
        await client.enqueue(EnqueueRequest(queue, "a", after=[0]))
    assert e.value.field == "after"
