"""The values the client takes and returns: requests, deliveries, records."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable, Mapping, Optional

from google.protobuf import duration_pb2, empty_pb2, timestamp_pb2

# The read side of a job (Job, JobAttempt, JobOrigin, JobParent, Progress,
# TraceContext and the enums JobState, DeadLetterCause and ParentFailure)
# is generated from sepp.v1.Job by tools/protoc-gen-sepp-sdk (sepp/_job.py,
# make generate): a field added to the proto reaches it with no edit here.
from sepp._job import (DeadLetterCause, Job, JobAttempt, JobOrigin, JobParent, JobState, ParentFailure, Progress,
                       TraceContext)

# The write side (EnqueueRequest, UniqueOptions) is generated from
# sepp.v1.EnqueueRequest (sepp/_enqueue.py), over sepp._enqueue_methods,
# which keeps what is not a plain field: validation and the idempotency
# key. A field added to the proto reaches it with no edit here.
from sepp._enqueue import EnqueueRequest, UniqueOptions
from sepp._queue_settings import QueueSettings
from sepp.errors import InvalidField, SeppError
from sepp.v1 import admin_service_pb2 as apb
from sepp.v1 import queue_service_pb2 as qpb
from sepp.v1 import types_pb2 as tpb

__all__ = [
    "Priority",
    "JobState",
    "DeadLetterCause",
    "ParentFailure",
    "EnqueueRequest",
    "UniqueOptions",
    "EnqueueResult",
    "BatchResult",
    "RetryDirective",
    "Job",
    "JobParent",
    "ParentResult",
    "JobAttempt",
    "JobOrigin",
    "Progress",
    "TraceContext",
    "JobContext",
    "Delivery",
    "DeadLetterRecord",
    "ServerInfo",
    "QueueStats",
    "ActionResult",
    "NodeInfo",
    "ClusterMember",
    "ClusterStatus",
    "ScheduleOverlap",
    "ScheduleCatchUp",
    "JobTemplate",
    "ScheduleDefinition",
    "Schedule",
    "QueueSettings",
    "QueueInfo",
    "QueueRemoval",
    "PurgeTarget",
    "RedriveState",
    "RedriveSelection",
    "RedriveOptions",
    "RedriveTask",
    "RedrivePreview",
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


def _whole_ms(d: timedelta) -> int:
    return d // timedelta(milliseconds=1)


#: The server's bound on Progress.message, in bytes of UTF-8
#: (server_info().limits.max_progress_message_bytes).
MAX_PROGRESS_MESSAGE_BYTES = 256


@dataclass(frozen=True)
class EnqueueResult:
    """What an enqueue did.

    ``duplicate`` is True when the idempotency key matched an enqueue made
    by an earlier call, or another job holds the request's uniqueness key,
    so nothing was added and ``job_id`` is that job (its ``state`` is
    UNKNOWN once it was acked). A retry inside one call whose
    earlier attempt may have applied never reports a duplicate: the job the
    server found is this call's own.
    """

    job_id: int
    state: JobState
    duplicate: bool
    idempotency_key: str


@dataclass
class Completion:
    """What a Worker handler may return to complete its job with more than a
    result: ``result`` (bytes, empty for none) as a handler's plain bytes
    are, and ``follow_ups``, jobs enqueued with the ack in the same log
    entry (``ack_with_follow_ups``), all or nothing and fenced by the lease:
    a handler whose lease was lost enqueues none. Follow-ups the server
    refuses leave the job uncompleted: the refusal reaches ``on_error`` and
    the job is nacked to run again. Give each an ``idempotency_key`` when a
    rerun must not enqueue it twice."""

    result: bytes = b""
    follow_ups: list[EnqueueRequest] = field(default_factory=list)


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
class ParentResult(JobParent):
    """A parent (JobParent) with its result (SeppClient.parent_results).

    ``kept`` is True when the server still held the completed parent, so
    ``result`` is its result (b"" when it gave none), whether the answer
    that brought the parent carried it or parent_results read it; False
    for a parent that did not complete, or whose queue keeps no completed
    jobs (or kept it past its completed_retention_ms). The other fields
    are the JobParent's as given."""

    result: bytes = b""
    kept: bool = False


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


def check_progress(percent: int, message: str, op: str) -> None:
    """Refuse what the server would refuse of a progress report
    (InvalidField naming progress.percent or progress.message), before a
    call is spent on it."""
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
        raise InvalidField("progress.percent", f"must be 0..100, got {percent!r}", "0..100", op=op)
    size = len(message.encode())
    if size > MAX_PROGRESS_MESSAGE_BYTES:
        raise InvalidField("progress.message", f"is {size} bytes, above the limit of {MAX_PROGRESS_MESSAGE_BYTES}",
                           str(MAX_PROGRESS_MESSAGE_BYTES), op=op)


class _ProgressBox:
    """Carries a handler's reports (Delivery.progress) to the Worker's
    lease keeper: the latest report not yet sent, and whether a refusal
    was reported (once per delivery)."""

    __slots__ = ("pending", "refused", "wake")

    def __init__(self) -> None:
        self.pending: Optional[Progress] = None
        self.refused = False
        self.wake: Optional[Callable[[], None]] = None

    def take(self) -> Optional[Progress]:
        p, self.pending = self.pending, None
        return p


@dataclass(frozen=True)
class Delivery:
    """One reserved job: the context to answer with, and the job.

    A handler run by a Worker reports the job's progress with
    :meth:`progress`."""

    ctx: JobContext
    job: Job
    # Set by the Worker for the delivery it hands a handler; None elsewhere.
    _progress: Optional[_ProgressBox] = field(default=None, repr=False, compare=False)

    def progress(self, percent: int, message: str = "") -> None:
        """Report the job's progress (``percent`` 0..100, ``message`` at
        most 256 bytes of UTF-8), for a handler run by a Worker. It never
        blocks nor calls the server: the report rides on the Worker's next
        lease extension, which it brings forward (to at most one extension
        per the Worker's ``progress_interval``, by default a second); of
        reports made in between only the latest is sent. get_job, list_jobs
        and wait_job then show it (Job.progress) until the delivery ends.

        Out of bounds it raises InvalidField (naming progress.percent or
        progress.message) here, and nothing is sent. A report the server
        refuses (while some cluster member does not keep progress yet:
        WrongState, feature=progress) is dropped, the lease extended
        without it, and the refusal reported to the Worker's ``on_error``
        once per delivery. A Delivery not run by a Worker (from
        SeppClient.reserve) raises RuntimeError: use
        SeppClient.report_progress there."""
        check_progress(percent, message, "progress")
        box = self._progress
        if box is None:
            raise RuntimeError("sepp: Delivery.progress outside a Worker (use SeppClient.report_progress)")
        box.pending = Progress(percent, message)
        if box.wake is not None:
            box.wake()


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
class JobOutcome:
    """What wait_job answers: the job and, once terminal, how it ended."""

    job: Job
    terminal: bool  # True once the job completed or died
    state: JobState  # COMPLETED or DEAD when terminal, the current state otherwise
    result: bytes  # the worker's result of a completed job (b"" when none)
    cause: DeadLetterCause  # why a dead job died; UNSPECIFIED otherwise
    finished_at: Optional[datetime]  # when it completed or died

    @classmethod
    def from_proto(cls, m: qpb.WaitJobResponse) -> JobOutcome:
        return cls(Job.from_proto(m.job), m.terminal, JobState(m.state), bytes(m.result),
                   DeadLetterCause(m.cause), _from_ts(m.finished_at))


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
    #: The queue's tags (key/value labels); empty when it has none.
    tags: Mapping[str, str] = field(default_factory=dict)
    #: Jobs waiting for their parents (JobState.BLOCKED).
    blocked: int = 0


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


class ScheduleOverlap(enum.IntEnum):
    """What a tick does while the job the schedule fired last is still
    waiting (Ready or Scheduled) or reserved."""

    #: The tick fires no job (it counts as skipped). The default.
    SKIP = apb.SCHEDULE_OVERLAP_SKIP
    #: Every tick fires a job.
    ALLOW = apb.SCHEDULE_OVERLAP_ALLOW

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def _missing_(cls, value: object) -> ScheduleOverlap:
        # Unset on the wire means skip.
        return cls.SKIP


class ScheduleCatchUp(enum.IntEnum):
    """What the ticks missed while no leader could fire them (the whole
    cluster down, say) make once a leader is back."""

    #: One job for all the missed ticks, at the latest of them. The default.
    ONCE = apb.SCHEDULE_CATCH_UP_ONCE
    #: No job for the missed ticks; the schedule moves on.
    SKIP = apb.SCHEDULE_CATCH_UP_SKIP

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def _missing_(cls, value: object) -> ScheduleCatchUp:
        return cls.ONCE


@dataclass(frozen=True)
class JobTemplate:
    """The job each tick of a schedule enqueues. Every fired job also
    carries the custom fields ``sepp_schedule`` (the schedule's name) and
    ``sepp_schedule_tick`` (the tick in unix nanoseconds, decimal).
    ``priority`` None and ``max_attempts`` 0 take the queue's defaults."""

    queue: str
    job_type: str
    payload: bytes = b""
    priority: Optional[int] = None
    custom: Mapping[str, str] = field(default_factory=dict)
    max_attempts: int = 0

    def to_proto(self) -> apb.JobTemplate:
        m = apb.JobTemplate(queue=self.queue, job_type=self.job_type, payload=bytes(self.payload),
                            custom=dict(self.custom), max_attempts=self.max_attempts)
        if self.priority is not None:
            m.priority = int(self.priority)
        return m

    @classmethod
    def from_proto(cls, m: apb.JobTemplate) -> JobTemplate:
        return cls(m.queue, m.job_type, bytes(m.payload), m.priority if m.HasField("priority") else None,
                   dict(m.custom), m.max_attempts)


@dataclass(frozen=True)
class ScheduleDefinition:
    """What defines a periodic schedule. Set exactly one of ``cron`` and
    ``interval``.

    ``cron`` is a cron expression (five fields: minute hour day-of-month
    month day-of-week; six with leading seconds; or a descriptor such as
    ``@hourly``) read in ``time_zone`` (an IANA name; "" is UTC).
    ``interval`` (at least 1s) ticks at the multiples of it since the unix
    epoch. ``paused`` creates the schedule paused (create_schedule only).
    The server checks the spec, the zone and the template and names the
    field it refuses (InvalidField).
    """

    name: str
    template: JobTemplate
    cron: str = ""
    interval: Optional[timedelta] = None
    time_zone: str = ""
    overlap: ScheduleOverlap = ScheduleOverlap.SKIP
    catch_up: ScheduleCatchUp = ScheduleCatchUp.ONCE
    paused: bool = False

    def to_proto(self) -> apb.Schedule:
        m = apb.Schedule(name=self.name, cron=self.cron, time_zone=self.time_zone,
                         template=self.template.to_proto(),
                         overlap=apb.ScheduleOverlap.Name(int(self.overlap)),
                         catch_up=apb.ScheduleCatchUp.Name(int(self.catch_up)), paused=self.paused)
        if self.interval is not None:
            m.interval.CopyFrom(_to_duration(self.interval))
        return m


@dataclass(frozen=True)
class Schedule:
    """A schedule as the server holds it: its definition and, read only,
    what it did and will do."""

    definition: ScheduleDefinition
    #: The next ticks, soonest first; empty while paused.
    next_fire_times: tuple[datetime, ...]
    #: The latest tick fired (None before the first), and the job it
    #: enqueued (0 when none did: skipped for overlap, missed, or refused).
    last_fire_time: Optional[datetime]
    last_job_id: int
    #: Ticks that enqueued a job, and ticks that did not.
    fired: int
    skipped: int
    created_at: Optional[datetime]
    updated_at: Optional[datetime]

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def paused(self) -> bool:
        return self.definition.paused

    @classmethod
    def from_proto(cls, m: apb.Schedule) -> Schedule:
        d = ScheduleDefinition(
            name=m.name, template=JobTemplate.from_proto(m.template), cron=m.cron,
            interval=m.interval.ToTimedelta() if m.HasField("interval") else None, time_zone=m.time_zone,
            overlap=ScheduleOverlap(m.overlap), catch_up=ScheduleCatchUp(m.catch_up), paused=m.paused)
        return cls(d, tuple(t for t in (_from_ts(ts) for ts in m.next_fire_times) if t is not None),
                   _from_ts(m.last_fire_time), m.last_job_id, m.fired, m.skipped, _from_ts(m.created_at),
                   _from_ts(m.updated_at))


# -- queues as managed objects ---------------------------------------------

# QueueSettings (in _queue_settings, imported above) and its conversions to
# and from the wire are generated from the proto (make generate,
# tools/protoc-gen-sepp-sdk): a setting added there needs no edit here.


def _queue_stats(q: apb.QueueSummary) -> QueueStats:
    return QueueStats(q.name, q.paused, q.configured, q.scheduled, q.ready, q.reserved, q.dead,
                      q.oldest_ready_age.ToTimedelta(), q.enqueued_total, q.acked_total,
                      {DeadLetterCause(c.cause): c.count for c in q.dead_lettered_total}, q.dropped_total,
                      dict(q.tags), q.blocked)


@dataclass(frozen=True)
class QueueInfo:
    """One queue (get_queue): its counts, its own settings and what it runs
    with (``effective``: its settings over the global limits)."""

    stats: QueueStats
    settings: QueueSettings
    effective: QueueSettings

    @classmethod
    def from_proto(cls, m: apb.GetQueueResponse) -> QueueInfo:
        return cls(_queue_stats(m.summary), QueueSettings.from_proto(m.settings),
                   QueueSettings.from_limits(m.effective))


@dataclass(frozen=True)
class QueueRemoval:
    """What delete_queue or purge_queue removed."""

    jobs: int
    dead_letters: int


class PurgeTarget(enum.IntEnum):
    """What purge_queue removes."""

    #: Ready and Scheduled jobs, retries waiting included; reserved ones stay.
    WAITING = apb.PURGE_TARGET_WAITING
    #: The queue's retained dead letters.
    DEAD_LETTERS = apb.PURGE_TARGET_DEAD_LETTERS


# -- redrive ----------------------------------------------------------------


class RedriveState(enum.IntEnum):
    UNKNOWN = apb.REDRIVE_STATE_UNSPECIFIED
    RUNNING = apb.REDRIVE_STATE_RUNNING
    PAUSED = apb.REDRIVE_STATE_PAUSED
    CANCELLED = apb.REDRIVE_STATE_CANCELLED
    DONE = apb.REDRIVE_STATE_DONE

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def _missing_(cls, value: object) -> RedriveState:
        return cls.UNKNOWN


@dataclass(frozen=True)
class RedriveSelection:
    """The dead letters a redrive moves; a field left empty matches all."""

    queue: str = ""
    cause: DeadLetterCause = DeadLetterCause.UNKNOWN  # UNKNOWN: any
    job_type: str = ""
    #: A substring of the record's last reason.
    reason_contains: str = ""
    #: failed_at at or after, when set.
    failed_after: Optional[datetime] = None
    #: failed_at before, when set.
    failed_before: Optional[datetime] = None

    def to_proto(self) -> apb.RedriveSelection:
        m = apb.RedriveSelection(queue=self.queue, cause=tpb.DeadLetterCause.Name(int(self.cause)),
                                 job_type=self.job_type, reason_contains=self.reason_contains)
        if self.failed_after is not None:
            m.failed_after.CopyFrom(_to_ts(self.failed_after))
        if self.failed_before is not None:
            m.failed_before.CopyFrom(_to_ts(self.failed_before))
        return m

    @classmethod
    def from_proto(cls, m: apb.RedriveSelection) -> RedriveSelection:
        return cls(m.queue, DeadLetterCause(m.cause), m.job_type, m.reason_contains, _from_ts(m.failed_after),
                   _from_ts(m.failed_before))


@dataclass(frozen=True)
class RedriveOptions:
    """A redrive: the records ``selection`` matches go back to their queue
    with their ids and attempts reset, or, with ``fresh``, are replayed as
    new jobs (to ``to_queue`` when named; it must exist), at ``rate`` jobs
    per second (1..10000; 0 lets the server use 100)."""

    selection: RedriveSelection = field(default_factory=RedriveSelection)
    to_queue: str = ""
    fresh: bool = False
    rate: int = 0

    def to_proto(self) -> apb.StartRedriveRequest:
        return apb.StartRedriveRequest(selection=self.selection.to_proto(), to_queue=self.to_queue,
                                       fresh=self.fresh, rate=self.rate)


@dataclass(frozen=True)
class RedriveTask:
    """A redrive task and, once ended, its audit record."""

    id: int
    options: RedriveOptions
    state: RedriveState
    moved: int
    #: Matching records still to move (0 once ended).
    remaining: int
    #: The highest record (job) id handled.
    cursor: int
    last_error: str
    #: The token name that started it ("" when admin auth is off).
    created_by: str
    created_at: Optional[datetime]
    updated_at: Optional[datetime]
    ended_at: Optional[datetime]
    ended_by: str

    @classmethod
    def from_proto(cls, m: apb.RedriveTask) -> RedriveTask:
        return cls(m.id, RedriveOptions(RedriveSelection.from_proto(m.selection), m.to_queue, m.fresh, m.rate),
                   RedriveState(m.state), m.moved, m.remaining, m.cursor, m.last_error, m.created_by,
                   _from_ts(m.created_at), _from_ts(m.updated_at), _from_ts(m.ended_at), m.ended_by)


@dataclass(frozen=True)
class RedrivePreview:
    """What a redrive would move: how many records, and the first of them."""

    matching: int
    sample: tuple[DeadLetterRecord, ...]
