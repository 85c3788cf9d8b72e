"""The methods of the enqueue family's types beyond their fields, which the
generated dataclasses of sepp._enqueue derive from
(tools/protoc-gen-sepp-sdk's enqMessages table names them): what is not a
plain field of the wire message, the validation and the idempotency key
the client sends."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Optional, Sequence

from sepp._job import ParentFailure
from sepp.errors import InvalidField
from sepp.v1 import queue_service_pb2 as qpb

if TYPE_CHECKING:
    from sepp._enqueue import UniqueOptions

#: The largest index EnqueueRequest.after may name (the server's bound).
_MAX_AFTER_INDEX = 2**31 - 1


def _item_field(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


class EnqueueRequestMethods:
    """One job to add.

    ``priority`` None takes the queue's default_priority; ``scheduled_at``
    (an absolute, timezone-aware instant) holds the job back until then;
    ``max_attempts`` 0 takes the queue's default_max_attempts. Without an
    ``idempotency_key`` the client generates one per call and reuses it on
    every retry of that call, so a retry through a failover never adds a
    second job.

    ``unique`` makes the job unique in its queue (see UniqueOptions).
    ``expires_at`` (timezone-aware, after the server's now and after
    ``scheduled_at``) and ``ttl`` (counted from the enqueue on the server's
    clock, whole milliseconds, at least 1ms) give the job a deadline by
    which it must be reserved, else it is dead-lettered with the cause
    EXPIRED; with both (or the queue's max_wait_ms) the earliest applies.
    A reserved job never expires.

    ``after`` makes the job wait for other requests of the same call, by
    their indexes: earlier items of one ``enqueue_batch`` or of one
    ``ack_with_follow_ups`` (a lone ``enqueue`` or a Producer refuses it
    with InvalidField naming ``after``). The job is BLOCKED until each has
    ended, then runs if each completed, else as ``on_parent_failure``
    says: None or ``ParentFailure.CANCEL`` dead-letters it at once (cause
    CANCELLED), ``ParentFailure.RUN`` runs it anyway (a callback, which
    reads its parents' outcomes in ``Job.parents``). A batch in which any
    job has ``after`` is applied whole or refused whole.

    The fields and their conversion to the wire are generated from
    sepp.v1.EnqueueRequest (sepp._enqueue); this class validates the
    request on construction and writes the idempotency key."""

    # The generated dataclass's fields, which these methods read.
    queue: str
    priority: Optional[int]
    scheduled_at: Optional[datetime]
    max_attempts: int
    expires_at: Optional[datetime]
    ttl: Optional[timedelta]
    unique: Optional[UniqueOptions]
    after: Sequence[int]
    on_parent_failure: Optional[ParentFailure]

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
        if self.expires_at is not None and self.expires_at.tzinfo is None:
            raise InvalidField(_item_field(prefix, "expires_at"),
                               "expires_at must be timezone-aware (e.g. datetime.now(timezone.utc))",
                               op="enqueue")
        if self.ttl is not None and self.ttl != timedelta(0) and self.ttl < timedelta(milliseconds=1):
            raise InvalidField(_item_field(prefix, "ttl_ms"), f"ttl must be at least 1ms, got {self.ttl}",
                               ">= 1ms", op="enqueue")
        if self.unique is not None and self.unique.completed_for < timedelta(0):
            raise InvalidField(_item_field(prefix, "unique.completed_for"),
                               f"unique.completed_for must not be negative, got {self.unique.completed_for}",
                               ">= 0", op="enqueue")
        for k, a in enumerate(self.after):
            if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a <= _MAX_AFTER_INDEX:
                raise InvalidField(_item_field(prefix, f"after[{k}]"),
                                   f"after[{k}] must be an earlier request's index, got {a!r}",
                                   "an earlier request's index", op="enqueue")
        p = self.on_parent_failure
        if p is not None:
            if isinstance(p, bool) or p not in (ParentFailure.CANCEL, ParentFailure.RUN):
                raise InvalidField(_item_field(prefix, "on_parent_failure"),
                                   f"on_parent_failure must be ParentFailure.CANCEL or RUN, got "
                                   f"{p!r}", "cancel or run", op="enqueue")
            if p == ParentFailure.RUN and not self.after:
                raise InvalidField(_item_field(prefix, "on_parent_failure"),
                                   "on_parent_failure is set, but the job waits for nothing (after is empty)",
                                   "with after", op="enqueue")

    def _to_proto(self) -> qpb.EnqueueRequest:
        raise NotImplementedError  # the generated dataclass's

    def to_proto(self, key: str) -> qpb.EnqueueRequest:
        """The wire form, sent with the idempotency key key (the caller's,
        or one the client generated)."""
        m = self._to_proto()
        m.idempotency_key = key
        return m
