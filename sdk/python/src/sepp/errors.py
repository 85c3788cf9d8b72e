"""Typed exceptions carrying the server's error details.

Every failed call raises a :class:`SeppError` subclass. The gRPC code says
what kind of failure it is; the typed detail the server attaches (see
``proto/sepp/v1/errors.proto``) becomes attributes of the exception, so a
caller catches what it can act on::

    try:
        await client.enqueue(request)
    except ScheduledTooFar as e:
        print(e.horizon, e.requested_at, e.latest_allowed)
    except UniqueConflict as e:
        print("held by job", e.job_id)
    except InvalidField as e:
        print(e.field, e.limit)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Optional, Sequence, cast

import grpc
from google.protobuf import any_pb2, timestamp_pb2

from sepp.googlerpc import error_details_pb2, status_pb2
from sepp.v1 import errors_pb2

__all__ = [
    "SeppError",
    "InvalidArgument",
    "InvalidField",
    "ScheduledTooFar",
    "NotFound",
    "AlreadyExists",
    "UniqueConflict",
    "LeaseLost",
    "JobCancelled",
    "WrongState",
    "ResourceExhausted",
    "QueueFull",
    "Unavailable",
    "NotLeader",
    "UnknownOutcome",
    "PermissionDenied",
    "Unauthenticated",
    "ClientClosed",
    "InternalError",
]

# The gRPC trailer that carries the google.rpc.Status with the details.
_STATUS_DETAILS_KEY = "grpc-status-details-bin"


class SeppError(Exception):
    """A failed call: the operation, the gRPC code and the server's message."""

    def __init__(
        self,
        message: str,
        *,
        op: str = "",
        code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
        server_message: str = "",
    ) -> None:
        super().__init__(f"sepp: {op}: {message}" if op else f"sepp: {message}")
        self.op = op
        self.code = code
        #: The status message exactly as the server sent it.
        self.server_message = server_message or message


class InvalidArgument(SeppError):
    """The request broke a rule; nothing changed."""


class InvalidField(InvalidArgument):
    """A request field broke a rule: ``field`` names it, ``limit`` the limit
    (for example ``"0..9"``; empty when it is not a numeric limit)."""

    def __init__(self, field: str, description: str, limit: str = "",
                 op: str = "", code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
                 server_message: str = "") -> None:
        text = description if field in description else f"{field}: {description}"
        super().__init__(text, op=op, code=code, server_message=server_message)
        self.field = field
        self.limit = limit
        self.description = description


class ScheduledTooFar(InvalidArgument):
    """``scheduled_at`` lies beyond the queue's schedule horizon."""

    def __init__(self, queue: str, horizon: timedelta, requested_at: datetime,
                 latest_allowed: datetime, op: str = "", code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
                 server_message: str = "") -> None:
        text = (f"scheduled_at {requested_at.isoformat()} is beyond the schedule "
                f"horizon of queue {queue!r} (max_schedule_horizon_ms="
                f"{int(horizon / timedelta(milliseconds=1))}, latest allowed "
                f"{latest_allowed.isoformat()})")
        super().__init__(text, op=op, code=code, server_message=server_message)
        self.queue = queue
        #: The queue's max_schedule_horizon_ms.
        self.horizon = horizon
        #: The scheduled_at asked for.
        self.requested_at = requested_at
        #: now + horizon: the latest scheduled_at the server would accept.
        self.latest_allowed = latest_allowed


class NotFound(SeppError):
    """No such job, dead-letter record or queue: ``field`` names the request
    field that named it (for example ``"name"``; empty when the server named
    none)."""

    def __init__(self, message: str, *, field: str = "", op: str = "",
                 code: grpc.StatusCode = grpc.StatusCode.UNKNOWN, server_message: str = "") -> None:
        super().__init__(message, op=op, code=code, server_message=server_message)
        self.field = field


class AlreadyExists(SeppError):
    """What the call would add exists already (a schedule of that name, a
    configured queue); nothing changed. ``field`` names the request field
    that named it (empty when the server named none)."""

    def __init__(self, message: str, *, field: str = "", op: str = "",
                 code: grpc.StatusCode = grpc.StatusCode.UNKNOWN, server_message: str = "") -> None:
        super().__init__(message, op=op, code=code, server_message=server_message)
        self.field = field


class UniqueConflict(AlreadyExists):
    """A unique enqueue with ``refuse`` found its key held by another job of
    the queue: ``job_id`` names that job, ``queue`` its queue. Nothing was
    added."""

    def __init__(self, queue: str, job_id: int, description: str, op: str = "",
                 code: grpc.StatusCode = grpc.StatusCode.UNKNOWN, server_message: str = "") -> None:
        super().__init__(description or f"job {job_id} of queue {queue!r} holds the unique key",
                         op=op, code=code, server_message=server_message)
        self.queue = queue
        #: The job holding the uniqueness key.
        self.job_id = job_id
        self.description = description


class LeaseLost(SeppError):
    """The delivery's lease is no longer the job's current one (it expired,
    or the job was redelivered, acked or released). Nothing changed."""


class JobCancelled(LeaseLost):
    """An operator cancelled the job while a worker held its lease: the lease
    was revoked, not lost. It is a LeaseLost too (the lease is gone all the
    same); test for JobCancelled first to tell the two apart. A cancel that
    deleted the job leaves no trace, and its lease reads as lost."""


class WrongState(SeppError):
    """The job is not in a state the operation accepts."""


class ResourceExhausted(SeppError):
    """A server limit refused the call; nothing was added."""


class QueueFull(ResourceExhausted):
    """The queue is at its max length; nothing was added."""


class Unavailable(SeppError):
    """No leader could be reached within the retry budget."""


class NotLeader(Unavailable):
    """The node does not lead; nothing was applied. The client follows the
    hint itself: callers see this only when the retry budget ran out."""

    def __init__(self, leader_id: str, leader_addr: str, op: str = "", code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
                 server_message: str = "") -> None:
        text = (f"not the leader; leader is {leader_id} at {leader_addr}"
                if leader_addr else "not the leader; no leader known")
        super().__init__(text, op=op, code=code, server_message=server_message)
        self.leader_id = leader_id
        self.leader_addr = leader_addr


class UnknownOutcome(SeppError):
    """The call may or may not have taken effect, and the client could not
    settle it (or, for a drain, must not retry). Never treat it as success
    or as a clean failure. ``last`` is the last attempt's failure."""

    def __init__(self, message: str, last: Optional[BaseException] = None,
                 op: str = "", code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
                 server_message: str = "") -> None:
        super().__init__(message, op=op, code=code, server_message=server_message)
        self.last = last


class PermissionDenied(SeppError):
    """The token lacks the role the call needs."""


class Unauthenticated(SeppError):
    """The server requires a valid bearer token."""


class ClientClosed(SeppError):
    """The client (or producer, or worker) was closed."""


class InternalError(SeppError):
    """The server failed in a way it did not classify."""


@dataclass(frozen=True)
class _Kw:
    """What every exception of one status shares."""

    op: str
    code: grpc.StatusCode
    server_message: str

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "code": self.code, "server_message": self.server_message}


@dataclass(frozen=True)
class _Details:
    """The typed details of one status, decoded."""

    field: Optional[InvalidField] = None
    too_far: Optional[ScheduledTooFar] = None
    not_leader: Optional[errors_pb2.NotLeader] = None
    precondition_is_lease: bool = False
    precondition_is_cancel: bool = False
    # A VERSION or QUEUE precondition: the server or the queue refused a
    # feature of the request (an ack's result), the lease still held.
    precondition_is_refusal: bool = False
    conflict: Optional[UniqueConflict] = None


def _ts(ts: timestamp_pb2.Timestamp) -> datetime:
    return datetime.fromtimestamp(0, timezone.utc) + timedelta(
        seconds=ts.seconds, microseconds=ts.nanos // 1000)


def _type_name(a: any_pb2.Any) -> str:
    return str(a.type_url).rsplit("/", 1)[-1]


# Operations fenced by a lease token: for them a missing job or a failed
# precondition means the lease is gone.
_LEASE_OPS = frozenset({"ack", "nack", "release", "extend lease"})


def _decode_details(details: Sequence[any_pb2.Any], kw: _Kw) -> _Details:
    field: Optional[InvalidField] = None
    too_far: Optional[ScheduledTooFar] = None
    not_leader: Optional[errors_pb2.NotLeader] = None
    lease = False
    cancelled = False
    refusal = False
    conflict: Optional[UniqueConflict] = None
    for d in details:
        name = _type_name(d)
        if name == "sepp.v1.FieldViolation" and field is None:
            fv = errors_pb2.FieldViolation.FromString(d.value)
            field = InvalidField(fv.field, fv.description or "invalid", fv.limit, **kw.as_dict())
        elif name == "google.rpc.BadRequest" and field is None:
            br = error_details_pb2.BadRequest.FromString(d.value)
            if br.field_violations:
                v = br.field_violations[0]
                field = InvalidField(v.field, v.description or "invalid", **kw.as_dict())
        elif name == "sepp.v1.ScheduledTooFar":
            st = errors_pb2.ScheduledTooFar.FromString(d.value)
            too_far = ScheduledTooFar(
                st.queue, timedelta(milliseconds=st.horizon_ms),
                _ts(st.requested_at), _ts(st.latest_allowed), **kw.as_dict())
        elif name == "sepp.v1.NotLeader":
            not_leader = errors_pb2.NotLeader.FromString(d.value)
        elif name == "google.rpc.PreconditionFailure":
            pf = error_details_pb2.PreconditionFailure.FromString(d.value)
            lease = lease or any("lease" in v.type.lower() for v in pf.violations)
            cancelled = cancelled or any(v.type == "LEASE_CANCELLED" for v in pf.violations)
            refusal = refusal or any(v.type in ("VERSION", "QUEUE") for v in pf.violations)
        elif name == "google.rpc.ResourceInfo":
            ri = error_details_pb2.ResourceInfo.FromString(d.value)
            if ri.resource_type == "job":
                try:
                    job_id = int(ri.resource_name)
                except ValueError:
                    job_id = 0
                conflict = UniqueConflict(ri.owner, job_id, ri.description, **kw.as_dict())
    return _Details(field, too_far, not_leader, lease, cancelled, refusal, conflict)


def status_details(err: grpc.RpcError) -> list[any_pb2.Any]:
    """The typed details of a gRPC error (empty when it carries none)."""
    md = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in md or ():
        if key == _STATUS_DETAILS_KEY and isinstance(value, bytes):
            return list(status_pb2.Status.FromString(value).details)
    return []


def not_leader_hint(err: grpc.RpcError) -> Optional[errors_pb2.NotLeader]:
    """The NotLeader detail of a gRPC error, if it has one."""
    for d in status_details(err):
        if _type_name(d) == "sepp.v1.NotLeader":
            return cast(errors_pb2.NotLeader, errors_pb2.NotLeader.FromString(d.value))
    return None


def from_status(op: str, code: grpc.StatusCode, message: str,
                details: Sequence[any_pb2.Any]) -> SeppError:
    """The exception for a status the server answered."""
    kw = _Kw(op, code, message)
    d = _decode_details(details, kw)
    C = grpc.StatusCode
    if code in (C.INVALID_ARGUMENT, C.OUT_OF_RANGE):
        if d.too_far is not None:
            return d.too_far
        if d.field is not None:
            return d.field
        return InvalidArgument(message, **kw.as_dict())
    if code == C.NOT_FOUND:
        if op in _LEASE_OPS:
            return LeaseLost(message, **kw.as_dict())
        return NotFound(message, field=d.field.field if d.field is not None else "", **kw.as_dict())
    if code == C.ALREADY_EXISTS:
        if d.conflict is not None:
            return d.conflict
        return AlreadyExists(message, field=d.field.field if d.field is not None else "", **kw.as_dict())
    if code == C.FAILED_PRECONDITION:
        if d.precondition_is_cancel:
            return JobCancelled(message, **kw.as_dict())
        if d.precondition_is_refusal:
            return WrongState(message, **kw.as_dict())
        if op in _LEASE_OPS or d.precondition_is_lease:
            return LeaseLost(message, **kw.as_dict())
        return WrongState(message, **kw.as_dict())
    if code == C.RESOURCE_EXHAUSTED:
        low = message.lower()
        full = ("queue full" in low or "max_length" in message or "max_queue_length" in message
                or (d.field is not None and (d.field.field == "queue" or "max_length" in d.field.limit)))
        cls = QueueFull if full else ResourceExhausted
        e: SeppError = cls(message, **kw.as_dict())
        return e
    if code == C.UNAVAILABLE:
        if d.not_leader is not None:
            return NotLeader(d.not_leader.leader_id, d.not_leader.leader_grpc_addr, **kw.as_dict())
        return Unavailable(message or "unavailable", **kw.as_dict())
    if code == C.ABORTED:
        return UnknownOutcome(message, **kw.as_dict())
    if code == C.PERMISSION_DENIED:
        return PermissionDenied(message, **kw.as_dict())
    if code == C.UNAUTHENTICATED:
        return Unauthenticated(message, **kw.as_dict())
    if code == C.DEADLINE_EXCEEDED:
        return Unavailable(message or "deadline exceeded", **kw.as_dict())
    return InternalError(message or code.name, **kw.as_dict())


def from_rpc_error(op: str, err: grpc.RpcError) -> SeppError:
    """The exception for a failed gRPC call."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    message = err.details() if hasattr(err, "details") else str(err)
    return from_status(op, code, message or "", status_details(err))


def from_item_error(op: str, code: int, message: str,
                    details: Sequence[any_pb2.Any]) -> SeppError:
    """The exception for one item of a batch (an ItemError, which has the
    shape of google.rpc.Status)."""
    status = _CODES.get(code, grpc.StatusCode.UNKNOWN)
    return from_status(op, status, message, details)


_CODES = {c.value[0]: c for c in grpc.StatusCode}
