"""The generated read side of a job (sepp/_job.py, from sepp.v1.Job): every
proto field filled, every native field checked. No server needed."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

from google.protobuf import duration_pb2, timestamp_pb2

from sepp.types import (DeadLetterCause, Job, JobAttempt, JobOrigin, JobParent, JobState, ParentFailure, Progress,
                        TraceContext)
from sepp.v1 import types_pb2 as tpb


def _ts(s: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=1_767_000_000 + s, nanos=5000)


def _dt(s: int) -> datetime:
    return datetime.fromtimestamp(1_767_000_000 + s, timezone.utc) + timedelta(microseconds=5)


def _all_set(m: Any) -> Any:
    """m, after checking that every field of its message is set: a field
    added to the proto fails here until the test fills (and checks) it."""
    unset = [f.name for f in m.DESCRIPTOR.fields if f.name not in {d.name for d, _ in m.ListFields()}]
    assert unset == [], f"{m.DESCRIPTOR.full_name}: fill {unset}"
    return m


ATTEMPT = _all_set(tpb.JobAttempt(attempt=2, worker_id="w-a", ended_at=_ts(6), outcome="nack", reason="boom",
                                  started_at=_ts(5), duration=duration_pb2.Duration(seconds=1, nanos=500_000_000),
                                  lease_token=2**64 - 1, directive="after"))
ORIGIN = _all_set(tpb.JobOrigin(queue="src", job_id=2**53 + 1, cause=tpb.DEAD_LETTER_CAUSE_LEASE_EXPIRED,
                                failed_at=_ts(7), last_reason="late", final_attempt=3))
TRACE = _all_set(tpb.TraceContext(traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                  tracestate="congo=t61rcWkgMzE"))
PROGRESS = _all_set(tpb.Progress(percent=42, message="half"))
PARENT = _all_set(tpb.JobParent(job_id=7, state=tpb.JOB_STATE_COMPLETED, cause=tpb.DEAD_LETTER_CAUSE_ADMIN, ended=True,
                                result_kept=True, result=b"parent", result_omitted=True))
JOB = _all_set(tpb.Job(
    id=2**53 + 3, queue="q", job_type="t", payload=b"payload", priority=7, state=tpb.JOB_STATE_RESERVED,
    enqueued_at=_ts(0), scheduled_at=_ts(1), next_attempt_at=_ts(2), attempt=3, max_attempts=5,
    custom={"a": "1", "b": "2"}, worker_id="w-1", lease_deadline=_ts(3), last_reason="boom", history=[ATTEMPT],
    started_at=_ts(4), origin=ORIGIN, expires_at=_ts(60), trace_context=TRACE, result=b"result",
    completed_at=_ts(8), run_time=duration_pb2.Duration(seconds=2, nanos=250_000_000), progress=PROGRESS,
    parents=[PARENT], on_parent_failure=tpb.PARENT_FAILURE_POLICY_RUN, waiting_children=[11, 2**64 - 2],
    waiting_children_total=101))

WANT = Job(
    2**53 + 3, "q", "t", b"payload", 7, JobState.RESERVED, _dt(0), _dt(1), _dt(2), 3, 5, {"a": "1", "b": "2"},
    "w-1", _dt(3), "boom",
    (JobAttempt(2, "w-a", _dt(6), "nack", "boom", started_at=_dt(5), duration=timedelta(milliseconds=1500),
                lease_token=2**64 - 1, directive="after"),),
    started_at=_dt(4),
    origin=JobOrigin(queue="src", job_id=2**53 + 1, cause=DeadLetterCause.LEASE_EXPIRED, failed_at=_dt(7),
                     last_reason="late", final_attempt=3),
    expires_at=_dt(60),
    trace_context=TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "congo=t61rcWkgMzE"),
    result=b"result",
    completed_at=_dt(8),
    run_time=timedelta(milliseconds=2250),
    progress=Progress(42, "half"),
    parents=(JobParent(7, JobState.COMPLETED, DeadLetterCause.ADMIN, True, result_kept=True, result=b"parent",
                       result_omitted=True),),
    on_parent_failure=ParentFailure.RUN,
    waiting_children=(11, 2**64 - 2),
    waiting_children_total=101,
)


def test_every_field_of_a_job_is_read() -> None:
    got = Job.from_proto(JOB)
    assert got == WANT
    # Field by field too, so that a failure names the field.
    for f in dataclasses.fields(Job):
        assert getattr(got, f.name) == getattr(WANT, f.name), f.name


def test_each_type_has_the_fields_of_its_message() -> None:
    pairs: list[tuple[Any, Any]] = [(Job, tpb.Job), (JobAttempt, tpb.JobAttempt), (JobOrigin, tpb.JobOrigin),
                                    (TraceContext, tpb.TraceContext), (Progress, tpb.Progress),
                                    (JobParent, tpb.JobParent)]
    for cls, msg in pairs:
        names = [f.name for f in dataclasses.fields(cls)]
        assert sorted(names) == sorted(f.name for f in msg.DESCRIPTOR.fields), cls.__name__


def test_an_empty_job_has_its_zero_values() -> None:
    j = Job.from_proto(tpb.Job())
    assert j == Job(0, "", "", b"", 0, JobState.UNKNOWN, None, None, None, 0, 0, {}, "", None, "", ())
    assert (j.origin, j.trace_context, j.run_time, j.progress, j.on_parent_failure) == (None, None, None, None, None)


def test_the_enums_by_every_value() -> None:
    assert [str(s) for s in JobState] == [
        v.name.removeprefix("JOB_STATE_").lower().replace("unspecified", "unknown")
        for v in tpb.JobState.DESCRIPTOR.values]
    assert [str(c) for c in DeadLetterCause] == [
        v.name.removeprefix("DEAD_LETTER_CAUSE_").lower().replace("unspecified", "unknown")
        for v in tpb.DeadLetterCause.DESCRIPTOR.values]
    assert [str(p) for p in ParentFailure] == [
        v.name.removeprefix("PARENT_FAILURE_POLICY_").lower() for v in tpb.ParentFailurePolicy.DESCRIPTOR.values][1:]
    # Set exactly when the job has parents; unspecified then reads as cancel.
    assert Job.from_proto(tpb.Job(parents=[tpb.JobParent(job_id=1)])).on_parent_failure is ParentFailure.CANCEL
    for e in (JobState, DeadLetterCause, ParentFailure):
        for member in e:
            assert e(int(member)) is member
    assert JobState(99) is JobState.UNKNOWN and DeadLetterCause(99) is DeadLetterCause.UNKNOWN
    assert ParentFailure(99) is ParentFailure.CANCEL
