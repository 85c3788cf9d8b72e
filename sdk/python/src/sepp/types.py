"""The values the client takes and returns: requests, deliveries, records."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Mapping, Optional

from google.protobuf import duration_pb2, empty_pb2, timestamp_pb2

from sepp.errors import InvalidField, SeppError
from sepp.v1 import queue_service_pb2 as qpb
from sepp.v1 import types_pb2 as tpb

__all__ = [
    "Priority",
    "JobState",
    "DeadLetterCause",
    "EnqueueRequest",
    "EnqueueResult",
    "BatchResult",
    "RetryDirective",
    "Job",
    "JobAttempt",
    "JobContext",
    "Delivery",
    "DeadLetterRecord",
    "ServerInfo",
    "QueueStats",
    "ActionResult",
    "NodeInfo",
    "ClusterMember",
    "ClusterStatus",
]


class Priority(enum.IntEnum):
    """Orders Ready jobs: every P9 job is handed out before any P8 job, and
    so on down; FIFO within one priority. MIN and MAX alias P0 and P9."""

    P0 = 0
    P1 = 1
    P2 = 2
    P3 = 3
    P4 = 4
    P5 = 5
    P6 = 6
    P7 = 7
    P8 = 8
    P9 = 9
    MIN = 0
    MAX = 9


class JobState(enum.IntEnum):
    """Where a job is in its lifecycle."""

    UNKNOWN = tpb.JOB_STATE_UNSPECIFIED
    SCHEDULED = tpb.JOB_STATE_SCHEDULED
    READY = tpb.JOB_STATE_READY
    RESERVED = tpb.JOB_STATE_RESERVED
    DEAD = tpb.JOB_STATE_DEAD

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def _missing_(cls, value: object) -> JobState:
        # A state a newer server added: unknown here, not a crash.
        return cls.UNKNOWN


class DeadLetterCause(enum.IntEnum):
    """Why a job was dead-lettered; exactly one per record."""

    UNKNOWN = tpb.DEAD_LETTER_CAUSE_UNSPECIFIED
    ATTEMPTS_EXHAUSTED = tpb.DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED
    REJECTED = tpb.DEAD_LETTER_CAUSE_REJECTED
    LEASE_EXPIRED = tpb.DEAD_LETTER_CAUSE_LEASE_EXPIRED
    ADMIN = tpb.DEAD_LETTER_CAUSE_ADMIN
    CANCELLED = tpb.DEAD_LETTER_CAUSE_CANCELLED
    EXPIRED = tpb.DEAD_LETTER_CAUSE_EXPIRED

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def _missing_(cls, value: object) -> DeadLetterCause:
        return cls.UNKNOWN


def _to_ts(t: datetime) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(t.astimezone(timezone.utc).replace(tzinfo=None))
    return ts


def _from_ts(ts: timestamp_pb2.Timestamp) -> Optional[datetime]:
    if ts.seconds == 0 and ts.nanos == 0:
        return None
    return datetime.fromtimestamp(0, timezone.utc) + timedelta(
        seconds=ts.seconds, microseconds=ts.nanos // 1000)


def _to_duration(d: timedelta) -> duration_pb2.Duration:
    out = duration_pb2.Duration()
    out.FromTimedelta(d)
    return out


def _item_field(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


@dataclass
class EnqueueRequest:
    """One job to add.

    ``priority`` None takes the queue's default_priority; ``scheduled_at``
    (an absolute, timezone-aware instant) holds the job back until then;
    ``max_attempts`` 0 takes the queue's default_max_attempts. Without an
    ``idempotency_key`` the client generates one per call and reuses it on
    every retry of that call, so a retry through a failover never adds a
    second job.
    """

    queue: str
    job_type: str
    payload: bytes = b""
    priority: Optional[int] = None
    scheduled_at: Optional[datetime] = None
    max_attempts: int = 0
    custom: dict[str, str] = field(default_factory=dict)
    idempotency_key: str = ""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self, prefix: str = "") -> None:
        """Raise InvalidField for what is certainly wrong before it costs a
        round trip; limits the server configures are left to the server."""
        if not self.queue:
            raise InvalidField(_item_field(prefix, "queue"), "queue must not be empty", op="enqueue")
        if self.priority is not None and not 0 <= int(self.priority) <= 9:
            raise InvalidField(_item_field(prefix, "priority"),
                               f"priority must be 0..9, got {int(self.priority)}", "0..9", op="enqueue")
        if self.scheduled_at is not None and self.scheduled_at.tzinfo is None:
            raise InvalidField(_item_field(prefix, "scheduled_at"),
                               "scheduled_at must be timezone-aware (e.g. datetime.now(timezone.utc))",
                               op="enqueue")
        if self.max_attempts < 0:
            raise InvalidField(_item_field(prefix, "max_attempts"),
                               f"max_attempts must not be negative, got {self.max_attempts}", op="enqueue")

    def to_proto(self, key: str) -> qpb.EnqueueRequest:
        m = qpb.EnqueueRequest(queue=self.queue, job_type=self.job_type, payload=bytes(self.payload),
                               max_attempts=self.max_attempts, custom=dict(self.custom),
                               idempotency_key=key)
        if self.priority is not None:
            m.priority = int(self.priority)
        if self.scheduled_at is not None:
            m.scheduled_at.CopyFrom(_to_ts(self.scheduled_at))
        return m


@dataclass(frozen=True)
class EnqueueResult:
    """What an enqueue did.

    ``duplicate`` is True when the idempotency key matched an enqueue made
    by an earlier call, so nothing was added. A retry inside one call whose
    earlier attempt may have applied never reports a duplicate: the job the
    server found is this call's own.
    """

    job_id: int
    state: JobState
    duplicate: bool
    idempotency_key: str


@dataclass(frozen=True)
class BatchResult:
    """One item's outcome of a batch: ``result`` or ``error``, never both."""

    result: Optional[EnqueueResult] = None
    error: Optional[SeppError] = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class RetryDirective:
    """A worker's word on what happens after a nack: the queue's retry
    policy (``default()``), a retry after a delay (``after(delta)``), or
    straight to the dead-letter store (``dead_letter()``)."""

    kind: str
    delay: timedelta = timedelta(0)

    @classmethod
    def default(cls) -> RetryDirective:
        return cls("default")

    @classmethod
    def after(cls, delay: timedelta) -> RetryDirective:
        if delay < timedelta(0):
            raise InvalidField("directive.after", f"directive.after must not be negative, got {delay}", op="nack")
        return cls("after", delay)

    @classmethod
    def dead_letter(cls) -> RetryDirective:
        return cls("dead_letter")

    def to_proto(self) -> qpb.RetryDirective:
        if self.kind == "after":
            return qpb.RetryDirective(after=_to_duration(self.delay))
        if self.kind == "dead_letter":
            return qpb.RetryDirective(dead_letter=empty_pb2.Empty())
        return qpb.RetryDirective(default=empty_pb2.Empty())


@dataclass(frozen=True)
class JobAttempt:
    """One ended delivery of a job."""

    attempt: int
    worker_id: str
    ended_at: Optional[datetime]
    outcome: str  # "nack", "lease_expired" or "released"
    reason: str


@dataclass(frozen=True)
class Job:
    """A snapshot of a job as the server held it when it answered."""

    id: int
    queue: str
    job_type: str
    payload: bytes
    priority: int
    state: JobState
    enqueued_at: Optional[datetime]
    scheduled_at: Optional[datetime]
    next_attempt_at: Optional[datetime]
    attempt: int
    max_attempts: int
    custom: Mapping[str, str]
    worker_id: str
    lease_deadline: Optional[datetime]
    last_reason: str
    history: tuple[JobAttempt, ...]

    @classmethod
    def from_proto(cls, m: tpb.Job) -> Job:
        return cls(
            id=m.id, queue=m.queue, job_type=m.job_type, payload=bytes(m.payload), priority=m.priority,
            state=JobState(m.state), enqueued_at=_from_ts(m.enqueued_at),
            scheduled_at=_from_ts(m.scheduled_at), next_attempt_at=_from_ts(m.next_attempt_at),
            attempt=m.attempt, max_attempts=m.max_attempts, custom=dict(m.custom),
            worker_id=m.worker_id, lease_deadline=_from_ts(m.lease_deadline),
            last_reason=m.last_reason,
            history=tuple(JobAttempt(a.attempt, a.worker_id, _from_ts(a.ended_at), a.outcome, a.reason)
                          for a in m.history),
        )


@dataclass(frozen=True)
class JobContext:
    """Identifies one delivery. ack, nack, release and extend_lease take it
    back: job_id and lease_token fence the delivery; attempt and
    max_attempts tell a handler where this delivery stands."""

    job_id: int
    lease_token: int
    attempt: int
    max_attempts: int
    lease_deadline: Optional[datetime]
    queue: str
    worker_id: str

    @property
    def last_attempt(self) -> bool:
        """Whether a failure of this delivery dead-letters the job."""
        return self.attempt >= self.max_attempts

    @classmethod
    def from_proto(cls, m: tpb.JobContext) -> JobContext:
        return cls(m.job_id, m.lease_token, m.attempt, m.max_attempts, _from_ts(m.lease_deadline),
                   m.queue, m.worker_id)

    def to_proto(self) -> tpb.JobContext:
        m = tpb.JobContext(job_id=self.job_id, lease_token=self.lease_token, attempt=self.attempt,
                           max_attempts=self.max_attempts, queue=self.queue, worker_id=self.worker_id)
        if self.lease_deadline is not None:
            m.lease_deadline.CopyFrom(_to_ts(self.lease_deadline))
        return m


@dataclass(frozen=True)
class Delivery:
    """One reserved job: the context to answer with, and the job."""

    ctx: JobContext
    job: Job


@dataclass(frozen=True)
class DeadLetterRecord:
    """A retained dead job."""

    job: Job  # snapshot at failure time, payload inline
    cause: DeadLetterCause
    failed_at: Optional[datetime]
    final_attempt: int
    last_reason: Optional[str]  # None when no worker nacked it

    @property
    def job_id(self) -> int:
        return self.job.id

    @classmethod
    def from_proto(cls, m: tpb.DeadLetterRecord) -> DeadLetterRecord:
        return cls(Job.from_proto(m.job), DeadLetterCause(m.cause), _from_ts(m.failed_at),
                   m.final_attempt, m.last_reason or None)

    def to_enqueue_request(self) -> EnqueueRequest:
        """An enqueue for the record's queue with its type, payload,
        priority, custom fields and max attempts. It makes a fresh job (a
        new id, attempts from 1), carries no idempotency key of its own and
        no scheduled_at: a replay runs now."""
        return EnqueueRequest(self.job.queue, self.job.job_type, self.job.payload,
                              priority=self.job.priority, max_attempts=self.job.max_attempts,
                              custom=dict(self.job.custom))


@dataclass(frozen=True)
class ServerInfo:
    """A node's capabilities and limits (GetServerInfo)."""

    version: str
    node_id: str
    leader_id: str
    leader_addr: str
    stale: bool
    dead_letter_retention_enabled: bool
    dead_letter_retention: timedelta
    max_reserve_batch: int
    max_schedule_horizon: timedelta
    #: Every global limit and default, as the server sent them.
    limits: qpb.Limits
    #: Each configured queue's effective settings.
    queues: tuple[qpb.QueueLimits, ...]

    def schedule_horizon(self, queue: str) -> timedelta:
        """The queue's schedule horizon: its override, else the global one."""
        for q in self.queues:
            if q.name == queue and q.max_schedule_horizon_ms > 0:
                return timedelta(milliseconds=q.max_schedule_horizon_ms)
        return self.max_schedule_horizon


@dataclass(frozen=True)
class QueueStats:
    """One queue's counts (ListQueues)."""

    name: str
    paused: bool
    configured: bool
    scheduled: int
    ready: int
    reserved: int
    dead: int
    oldest_ready_age: timedelta
    enqueued_total: int
    acked_total: int
    dead_lettered_total: Mapping[DeadLetterCause, int]
    dropped_total: int


@dataclass(frozen=True)
class ActionResult:
    """The outcome of an operator action on one job id."""

    job_id: int
    error: Optional[SeppError] = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class NodeInfo:
    """One cluster member's identity and addresses."""

    id: str
    raft_addr: str
    grpc_addr: str
    http_addr: str


@dataclass(frozen=True)
class ClusterMember:
    """One voter or non-voter of the configuration."""

    node: NodeInfo
    voter: bool
    leader: bool
    healthy: bool  # the leader's view
    last_contact: str  # as raft reports it


@dataclass(frozen=True)
class ClusterStatus:
    """One node's view of the cluster."""

    self_node: NodeInfo
    leader: Optional[NodeInfo]  # None when no leader is known
    state: str  # "Leader", "Follower", "Candidate" or "Shutdown"
    term: int
    commit_index: int
    applied_index: int
    last_log_index: int
    members: tuple[ClusterMember, ...]
