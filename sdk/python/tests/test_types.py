"""The value types, without a server."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2

from sepp import (AlreadyExists, DeadLetterCause, EnqueueRequest, InvalidField, Job, JobParent, JobState, NotFound,
                  ParentFailure, ParentResult, Priority, QueueSettings, RedriveOptions, RedriveSelection,
                  RetryDirective, SeppClient)
from sepp.errors import from_status
from sepp.types import _queue_stats
from sepp.v1 import admin_service_pb2 as apb
from sepp.v1 import errors_pb2
from sepp.v1 import queue_service_pb2 as qpb
from sepp.v1 import types_pb2 as tpb


@pytest.mark.parametrize("kwargs, field, limit", [
    ({"queue": ""}, "queue", ""),
    ({"priority": 10}, "priority", "0..9"),
    ({"priority": -1}, "priority", "0..9"),
    ({"scheduled_at": datetime(2030, 1, 1)}, "scheduled_at", ""),
    ({"max_attempts": -1}, "max_attempts", ""),
])
def test_enqueue_request_rejects(kwargs: dict[str, object], field: str, limit: str) -> None:
    args: dict[str, object] = {"queue": "q", "job_type": "t", **kwargs}
    with pytest.raises(InvalidField) as e:
        EnqueueRequest(**args)  # type: ignore[arg-type]
    assert (e.value.field, e.value.limit) == (field, limit)


def test_priority_constants() -> None:
    assert [int(p) for p in (Priority.MIN, Priority.P0, Priority.P9, Priority.MAX)] == [0, 0, 9, 9]
    assert (Priority.MAX.name, Priority.MIN.name) == ("P9", "P0")  # aliases, one member each


def test_to_proto() -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=timezone(timedelta(hours=2)))
    m = EnqueueRequest("q", "t", b"p", priority=Priority.P3, scheduled_at=at, max_attempts=4,
                       custom={"a": "b"}).to_proto("key")
    assert (m.queue, m.job_type, m.payload, m.priority, m.max_attempts, dict(m.custom), m.idempotency_key) == (
        "q", "t", b"p", 3, 4, {"a": "b"}, "key")
    assert m.scheduled_at.ToDatetime().replace(tzinfo=timezone.utc) == at
    # Unset priority stays unset: the queue's default applies.
    assert not EnqueueRequest("q", "t").to_proto("k").HasField("priority")


def test_directives() -> None:
    assert RetryDirective.default().to_proto().WhichOneof("directive") == "default"
    d = RetryDirective.after(timedelta(seconds=90)).to_proto()
    assert (d.WhichOneof("directive"), d.after.seconds) == ("after", 90)
    assert RetryDirective.dead_letter().to_proto().WhichOneof("directive") == "dead_letter"
    with pytest.raises(InvalidField) as e:
        RetryDirective.after(timedelta(seconds=-1))
    assert e.value.field == "directive.after"


def test_unknown_enum_values_from_a_newer_server() -> None:
    assert JobState(99) is JobState.UNKNOWN and DeadLetterCause(99) is DeadLetterCause.UNKNOWN
    assert JobState(tpb.JOB_STATE_READY) is JobState.READY and str(JobState.READY) == "ready"


def test_queue_settings_round_trip_keeps_what_is_unset_unset() -> None:
    s = QueueSettings(default_priority=0, retry_delay=timedelta(milliseconds=1500), retry_backoff="exponential",
                      max_length=0, dead_letter_queue="", rate_period=timedelta(seconds=2))
    m = s.to_proto()
    # Zero and "" are values, sent as set (an update to 0 or "" drops a limit).
    assert m.HasField("default_priority") and m.HasField("max_length") and m.HasField("dead_letter_queue")
    assert not m.HasField("default_max_attempts") and not m.HasField("max_wait_ms")
    assert (m.retry_delay_ms, m.rate_period_ms, m.retry_backoff) == (1500, 2000, tpb.RETRY_BACKOFF_EXPONENTIAL)
    assert QueueSettings.from_proto(m) == s


def _fill(m: Any, names: Any) -> None:
    """Sets each field of m named in names to a value other than its
    default, by its descriptor: the last enum value, "x", True, 7, a map
    wrapper's map to {"k": "v"}."""
    for f in m.DESCRIPTOR.fields:
        if f.name not in names:
            continue
        if f.message_type is not None:
            getattr(getattr(m, f.name), f.message_type.fields[0].name)["k"] = "v"
        elif f.enum_type is not None:
            setattr(m, f.name, f.enum_type.values[-1].number)
        elif f.type == f.TYPE_STRING:
            setattr(m, f.name, "x")
        elif f.type == f.TYPE_BOOL:
            setattr(m, f.name, True)
        else:
            setattr(m, f.name, 7)


def test_queue_settings_carry_every_proto_field() -> None:
    # The proto is filled from its descriptor, so a setting added to it is
    # covered here with no edit: the generated dataclass must carry it both
    # ways, and from_limits must read it when QueueLimits has it.
    m = apb.QueueSettings()
    _fill(m, m.DESCRIPTOR.fields_by_name)
    for f in m.DESCRIPTOR.fields:
        assert m.HasField(f.name), f"the test leaves {f.name} unset"
    s = QueueSettings.from_proto(m)
    assert [x.name for x in dataclasses.fields(s) if getattr(s, x.name) is None] == []
    assert s.to_proto() == m

    lim = qpb.QueueLimits()
    _fill(lim, m.DESCRIPTOR.fields_by_name)
    e = QueueSettings.from_limits(lim).to_proto()
    for f in m.DESCRIPTOR.fields:
        if f.name in lim.DESCRIPTOR.fields_by_name:
            assert e.HasField(f.name) and getattr(e, f.name) == getattr(lim, f.name), f.name
        else:
            assert not e.HasField(f.name), f.name


def test_queue_settings_refuses_an_unknown_backoff() -> None:
    with pytest.raises(InvalidField) as e:
        QueueSettings(retry_backoff="linear").to_proto()
    assert e.value.field == "retry_backoff"


def test_redrive_options_to_proto() -> None:
    after = datetime(2026, 12, 1, tzinfo=timezone.utc)
    m = RedriveOptions(RedriveSelection(queue="q", cause=DeadLetterCause.ADMIN, failed_after=after),
                       to_queue="r", fresh=True, rate=50).to_proto()
    assert (m.selection.queue, m.selection.cause, m.to_queue, m.fresh, m.rate) == (
        "q", tpb.DEAD_LETTER_CAUSE_ADMIN, "r", True, 50)
    assert m.selection.failed_after.ToDatetime(tzinfo=timezone.utc) == after
    assert not m.selection.HasField("failed_before")
    assert RedriveSelection.from_proto(m.selection) == RedriveSelection(queue="q", cause=DeadLetterCause.ADMIN,
                                                                        failed_after=after)


@pytest.mark.parametrize("code, cls", [
    (grpc.StatusCode.NOT_FOUND, NotFound),
    (grpc.StatusCode.ALREADY_EXISTS, AlreadyExists),
])
def test_not_found_and_already_exists_name_the_field(code: grpc.StatusCode, cls: type) -> None:
    detail = any_pb2.Any()
    detail.Pack(errors_pb2.FieldViolation(field="name", description='queue "q" does not exist'))
    err = from_status("get queue", code, 'queue "q" does not exist', [detail])
    assert type(err) is cls
    assert isinstance(err, (NotFound, AlreadyExists))
    assert err.field == "name"
    bare = from_status("get queue", code, "m", [])
    assert isinstance(bare, (NotFound, AlreadyExists)) and bare.field == ""


@pytest.mark.parametrize("kwargs, field, limit", [
    ({"after": [-1]}, "after[0]", "an earlier request's index"),
    ({"after": [0, 2**31]}, "after[1]", "an earlier request's index"),
    ({"after": [True]}, "after[0]", "an earlier request's index"),
    ({"on_parent_failure": ParentFailure.RUN}, "on_parent_failure", "with after"),
    ({"after": [0], "on_parent_failure": "run"}, "on_parent_failure", "cancel or run"),
])
def test_enqueue_request_rejects_bad_dependencies(kwargs: dict[str, object], field: str, limit: str) -> None:
    args: dict[str, object] = {"queue": "q", "job_type": "t", **kwargs}
    with pytest.raises(InvalidField) as e:
        EnqueueRequest(**args)  # type: ignore[arg-type]
    assert (e.value.field, e.value.limit) == (field, limit)


def test_dependencies_to_proto() -> None:
    m = EnqueueRequest("q", "t", after=[0, 2], on_parent_failure=ParentFailure.RUN).to_proto("k")
    assert (list(m.after), m.on_parent_failure) == ([0, 2], tpb.PARENT_FAILURE_POLICY_RUN)
    # Unset, the policy is left to the server (cancel); CANCEL needs no after.
    plain = EnqueueRequest("q", "t").to_proto("k")
    assert (list(plain.after), plain.on_parent_failure) == ([], tpb.PARENT_FAILURE_POLICY_UNSPECIFIED)
    cancel = EnqueueRequest("q", "t", on_parent_failure=ParentFailure.CANCEL).to_proto("k")
    assert cancel.on_parent_failure == tpb.PARENT_FAILURE_POLICY_CANCEL


def test_job_parents_from_proto() -> None:
    m = tpb.Job(id=9, state=tpb.JOB_STATE_BLOCKED, on_parent_failure=tpb.PARENT_FAILURE_POLICY_RUN, parents=[
        tpb.JobParent(job_id=7, state=tpb.JOB_STATE_DEAD, cause=tpb.DEAD_LETTER_CAUSE_REJECTED, ended=True),
        tpb.JobParent(job_id=8, state=tpb.JOB_STATE_RESERVED),
        tpb.JobParent(job_id=6, ended=True),  # deleted
        tpb.JobParent(job_id=5, state=tpb.JOB_STATE_COMPLETED, ended=True, result_kept=True, result=b"five"),
        tpb.JobParent(job_id=4, state=tpb.JOB_STATE_COMPLETED, ended=True, result_kept=True, result_omitted=True),
    ])
    j = Job.from_proto(m)
    assert (j.state, str(j.state), j.on_parent_failure) == (JobState.BLOCKED, "blocked", ParentFailure.RUN)
    assert j.parents == (JobParent(7, JobState.DEAD, DeadLetterCause.REJECTED, True),
                         JobParent(8, JobState.RESERVED, DeadLetterCause.UNKNOWN, False),
                         JobParent(6, JobState.UNKNOWN, DeadLetterCause.UNKNOWN, True),
                         JobParent(5, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True,
                                   result=b"five"),
                         JobParent(4, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True,
                                   result_omitted=True))
    assert (j.parents[0].result_kept, j.parents[0].result, j.parents[0].result_omitted) == (False, b"", False)
    # Unspecified with parents is cancel; without parents there is no policy.
    assert Job.from_proto(tpb.Job(parents=[tpb.JobParent(job_id=1)])).on_parent_failure is ParentFailure.CANCEL
    plain = Job.from_proto(tpb.Job(id=1))
    assert (plain.parents, plain.on_parent_failure) == ((), None)
    assert str(ParentFailure.RUN) == "run" and ParentFailure(99) is ParentFailure.CANCEL


def test_job_waiting_children_from_proto() -> None:
    # The first ids the server listed, and how many there are in all.
    j = Job.from_proto(tpb.Job(id=3, waiting_children=[4, 9, 12], waiting_children_total=250))
    assert (j.waiting_children, j.waiting_children_total) == ((4, 9, 12), 250)
    plain = Job.from_proto(tpb.Job(id=1))
    assert (plain.waiting_children, plain.waiting_children_total) == ((), 0)


def test_queue_stats_blocked() -> None:
    q = _queue_stats(apb.QueueSummary(name="q", ready=1, blocked=3))
    assert (q.ready, q.blocked) == (1, 3)


async def test_dependencies_are_refused_where_indexes_mean_nothing() -> None:
    # Nothing listens there: each refusal comes before any call.
    async with await SeppClient.connect("127.0.0.1:1", retry_timeout=0.5) as c:
        with pytest.raises(InvalidField) as e:
            await c.enqueue(EnqueueRequest("q", "t", after=[0]))
        assert e.value.field == "after"
        async with c.producer() as p:
            with pytest.raises(InvalidField) as e:
                await p.enqueue(EnqueueRequest("q", "t", after=[0]))
            assert e.value.field == "after"


async def test_a_batch_with_dependencies_fails_whole_on_an_item_the_client_refuses() -> None:
    bad = EnqueueRequest("q", "render")
    bad.priority = 12  # past the constructor's check, as a caller may mutate it
    batch = [EnqueueRequest("q", "plan"), bad, EnqueueRequest("q", "stitch", after=[0, 1])]
    async with await SeppClient.connect("127.0.0.1:1", retry_timeout=0.5) as c:
        # Sent without the bad item, "after": [0, 1] would name other jobs:
        # the whole call fails, naming the item as given.
        with pytest.raises(InvalidField) as e:
            await c.enqueue_batch(batch)
        assert e.value.field == "jobs[1].priority"


async def test_parent_results_asks_only_for_completed_parents() -> None:
    parents = [JobParent(1, JobState.DEAD, DeadLetterCause.REJECTED, True),
               JobParent(2, JobState.BLOCKED, DeadLetterCause.UNKNOWN, False)]
    async with await SeppClient.connect("127.0.0.1:1", retry_timeout=0.5) as c:
        got = await c.parent_results(parents)
    assert got == [ParentResult(1, JobState.DEAD, DeadLetterCause.REJECTED, True, b"", False),
                   ParentResult(2, JobState.BLOCKED, DeadLetterCause.UNKNOWN, False, b"", False)]
    assert got[0].cause is DeadLetterCause.REJECTED and not got[0].kept


async def test_parent_results_reads_only_the_results_an_answer_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    parents = [JobParent(1, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True, result=b"one"),
               JobParent(2, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True,
                         result_omitted=True),
               JobParent(3, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True),  # as list_jobs gives it
               JobParent(4, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, result_kept=True)]  # no result
    asked: list[int] = []

    async def get_job(job_id: int, *, stale: bool = False) -> Job:
        asked.append(job_id)
        if job_id == 3:
            raise NotFound("no such job")  # its record is gone
        return Job.from_proto(tpb.Job(id=job_id, state=tpb.JOB_STATE_COMPLETED, result=b"read %d" % job_id))

    async with await SeppClient.connect("127.0.0.1:1", retry_timeout=0.5) as c:
        monkeypatch.setattr(c, "get_job", get_job)
        got = await c.parent_results(parents)
    assert asked == [2, 3]
    assert [(p.job_id, p.result, p.kept) for p in got] == [
        (1, b"one", True), (2, b"read 2", True), (3, b"", False), (4, b"", True)]
    assert got[1] == ParentResult(2, JobState.COMPLETED, DeadLetterCause.UNKNOWN, True, b"read 2", True,
                                  result_kept=True, result_omitted=True)
