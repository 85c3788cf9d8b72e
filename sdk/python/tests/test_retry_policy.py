"""The retry rules of SeppClient._call, with scripted attempt outcomes
(no server): which failures are retried, with what, and which never."""

from __future__ import annotations

from typing import Optional

import grpc
import grpc.aio
import pytest

from sepp import EnqueueRequest, InvalidField, NotLeader, SeppClient, UnknownOutcome
from sepp.client import _Attempt, _Policy
from sepp.googlerpc import status_pb2
from sepp.v1 import errors_pb2
from sepp.v1 import queue_service_pb2 as qpb
from sepp.v1 import types_pb2 as tpb


def rpc_error(code: grpc.StatusCode, leader: Optional[str] = None,
              field: Optional[str] = None) -> grpc.aio.AioRpcError:
    st = status_pb2.Status(code=code.value[0], message=code.name)
    if leader is not None:
        st.details.add().Pack(errors_pb2.NotLeader(leader_id="n", leader_grpc_addr=leader))
    if field is not None:
        st.details.add().Pack(errors_pb2.FieldViolation(field=field, limit="0..9", description=f"{field} bad"))
    md = grpc.aio.Metadata(("grpc-status-details-bin", st.SerializeToString()))
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), md, details=code.name)


class Script:
    """Raises the scripted errors in turn, then answers "ok"; records the
    node of every attempt and whether it was told an earlier one may have
    applied."""

    def __init__(self, *errors: grpc.aio.AioRpcError) -> None:
        self.errors = list(errors)
        self.attempts: list[tuple[str, bool]] = []

    async def __call__(self, a: _Attempt) -> str:
        self.attempts.append((a.addr, a.maybe_applied))
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def client() -> SeppClient:
    return SeppClient(["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"], retry_timeout=2, backoff_base=0.001,
                      backoff_max=0.002, leader_probe=0)


async def test_safe_call_retries_transport_failures_and_follows_not_leader() -> None:
    c = client()
    s = Script(rpc_error(grpc.StatusCode.UNAVAILABLE), rpc_error(grpc.StatusCode.UNAVAILABLE, leader="127.0.0.1:3"))
    assert await c._call("enqueue", _Policy.SAFE, s) == "ok"
    # Unavailable moves on to the next node; NotLeader goes to the leader named.
    assert s.attempts == [("127.0.0.1:1", False), ("127.0.0.1:2", True), ("127.0.0.1:3", True)]
    assert c.leader == "127.0.0.1:3"
    await c.close()


async def test_drain_is_not_retried_once_it_may_have_been_applied() -> None:
    c = client()
    s = Script(rpc_error(grpc.StatusCode.UNAVAILABLE))
    with pytest.raises(UnknownOutcome):
        await c._call("drain dead letters", _Policy.NOT_SENT, s)
    assert len(s.attempts) == 1
    await c.close()


async def test_drain_follows_not_leader_which_applied_nothing() -> None:
    c = client()
    s = Script(rpc_error(grpc.StatusCode.UNAVAILABLE, leader="127.0.0.1:2"))
    assert await c._call("drain dead letters", _Policy.NOT_SENT, s) == "ok"
    assert s.attempts == [("127.0.0.1:1", False), ("127.0.0.1:2", False)]
    await c.close()


async def test_aborted_unknown_outcome_is_retried_and_marked() -> None:
    c = client()
    s = Script(rpc_error(grpc.StatusCode.ABORTED))
    assert await c._call("reserve", _Policy.SAFE, s) == "ok"
    assert [m for _, m in s.attempts] == [False, True]
    await c.close()


async def test_final_errors_are_not_retried() -> None:
    c = client()
    s = Script(rpc_error(grpc.StatusCode.INVALID_ARGUMENT, field="priority"))
    with pytest.raises(InvalidField) as e:
        await c._call("enqueue", _Policy.SAFE, s)
    assert (e.value.field, e.value.limit, len(s.attempts)) == ("priority", "0..9", 1)
    await c.close()


async def test_not_leader_without_budget_surfaces() -> None:
    c = SeppClient(["127.0.0.1:1"], retry_timeout=0, leader_probe=0)
    s = Script(rpc_error(grpc.StatusCode.UNAVAILABLE, leader="127.0.0.1:2"))
    with pytest.raises(NotLeader) as e:
        await c._call("enqueue", _Policy.SAFE, s)
    assert e.value.leader_addr == "127.0.0.1:2"
    await c.close()


async def test_lease_lost_after_a_maybe_applied_attempt_is_unknown() -> None:
    c = client()
    s = Script(rpc_error(grpc.StatusCode.UNAVAILABLE), rpc_error(grpc.StatusCode.FAILED_PRECONDITION))
    with pytest.raises(UnknownOutcome):
        await c._call("ack", _Policy.SAFE, s)
    await c.close()


class Wire:
    """Stands in for the network under the public calls: records each
    request and raises the scripted errors before answering."""

    def __init__(self, answer: object, *errors: grpc.aio.AioRpcError) -> None:
        self.answer = answer
        self.errors = list(errors)
        self.requests: list[object] = []

    async def __call__(self, a: _Attempt, call: object, req: object) -> object:
        self.requests.append(req)
        if self.errors:
            raise self.errors.pop(0)
        return self.answer


async def test_enqueue_sends_one_key_on_every_retry() -> None:
    c = client()
    wire = Wire(qpb.EnqueueResponse(job_id=7, state=tpb.JOB_STATE_READY, duplicate=True),
                rpc_error(grpc.StatusCode.UNAVAILABLE), rpc_error(grpc.StatusCode.ABORTED))
    setattr(c, "_unary", wire)
    res = await c.enqueue(EnqueueRequest("q", "t"))
    keys = {r.idempotency_key for r in wire.requests}  # type: ignore[attr-defined]
    assert len(wire.requests) == 3 and keys == {res.idempotency_key} and len(res.idempotency_key) == 32
    # The server found this call's own earlier attempt: not a duplicate.
    assert (res.job_id, res.duplicate) == (7, False)
    await c.close()


async def test_reserve_sends_one_request_id_on_every_retry() -> None:
    c = client()
    wire = Wire(qpb.ReserveResponse(), rpc_error(grpc.StatusCode.UNAVAILABLE), rpc_error(grpc.StatusCode.ABORTED))
    setattr(c, "_unary", wire)
    assert await c.reserve("q") == []
    ids = {r.request_id for r in wire.requests}  # type: ignore[attr-defined]
    assert len(wire.requests) == 3 and len(ids) == 1 and ids != {""}
    await c.close()


async def test_drain_dead_letters_sends_once_on_a_lost_answer() -> None:
    c = client()
    c._leader = "127.0.0.1:1"
    wire = Wire(qpb.DrainDeadLettersResponse(), rpc_error(grpc.StatusCode.UNAVAILABLE))
    setattr(c, "_unary", wire)
    with pytest.raises(UnknownOutcome):
        await c.drain_dead_letters("q", 10)
    assert len(wire.requests) == 1
    await c.close()
