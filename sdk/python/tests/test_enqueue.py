"""The generated write side of a job (sepp/_enqueue.py, from
sepp.v1.EnqueueRequest) and its hand-kept base: every proto field filled
through the native type, the whole wire message checked. No server
needed."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from google.protobuf import timestamp_pb2

from sepp.errors import InvalidField
from sepp.types import EnqueueRequest, ParentFailure, TraceContext, UniqueOptions
from sepp.v1 import queue_service_pb2 as qpb
from sepp.v1 import types_pb2 as tpb


def _all_set(m: Any) -> Any:
    """m, after checking that every field of its message is set: a field
    added to the proto fails here until the test fills (and checks) it."""
    unset = [f.name for f in m.DESCRIPTOR.fields if f.name not in {d.name for d, _ in m.ListFields()}]
    assert unset == [], f"{m.DESCRIPTOR.full_name}: fill {unset}"
    return m


def _ts(s: int) -> timestamp_pb2.Timestamp:
    return timestamp_pb2.Timestamp(seconds=1_767_000_000 + s, nanos=5000)


def _dt(s: int) -> datetime:
    return datetime.fromtimestamp(1_767_000_000 + s, timezone.utc) + timedelta(microseconds=5)


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

WIRE = _all_set(qpb.EnqueueRequest(
    queue="q", job_type="email", payload=b"hi", priority=7, scheduled_at=_ts(1), max_attempts=4,
    custom={"tenant": "acme"}, idempotency_key="key-1",
    unique=_all_set(qpb.UniqueOptions(key="k-1", fields=["tenant", "region"], cover_dead=True,
                                      completed_for_ms=60_000, refuse=True)),
    expires_at=_ts(2), ttl_ms=1500,
    trace_context=_all_set(tpb.TraceContext(traceparent=TRACEPARENT, tracestate="vendor=x")),
    after=[0, 2], on_parent_failure=tpb.PARENT_FAILURE_POLICY_RUN))


def test_every_field_reaches_the_wire() -> None:
    r = EnqueueRequest("q", "email", b"hi", 7, _dt(1), 4, {"tenant": "acme"}, "the caller's",
                       UniqueOptions("k-1", ("tenant", "region"), True, timedelta(seconds=60, microseconds=700),
                                     True),
                       _dt(2), timedelta(milliseconds=1500, microseconds=900),
                       TraceContext(TRACEPARENT, "vendor=x"), (0, 2), ParentFailure.RUN)
    assert r.to_proto("key-1") == WIRE


def test_unset_fields_stay_unset() -> None:
    m = EnqueueRequest("q", "t").to_proto("k")
    assert m == qpb.EnqueueRequest(queue="q", job_type="t", idempotency_key="k")
    assert not m.HasField("priority") and not m.HasField("unique") and not m.HasField("trace_context")
    m = EnqueueRequest("q", "t", priority=0, unique=UniqueOptions(),
                       on_parent_failure=ParentFailure.CANCEL).to_proto("k")
    assert m.HasField("priority") and m.priority == 0
    assert m.HasField("unique") and m.unique == qpb.UniqueOptions()
    assert m.on_parent_failure == tpb.PARENT_FAILURE_POLICY_CANCEL


def test_validated_on_construction() -> None:
    with pytest.raises(InvalidField) as e:
        EnqueueRequest("q", "t", after=(-1,))
    assert e.value.field == "after[0]"
    with pytest.raises(InvalidField):
        EnqueueRequest("", "t")
