from google.protobuf import any_pb2 as _any_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DEAD_LETTER_CAUSE_ADMIN: DeadLetterCause
DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED: DeadLetterCause
DEAD_LETTER_CAUSE_CANCELLED: DeadLetterCause
DEAD_LETTER_CAUSE_EXPIRED: DeadLetterCause
DEAD_LETTER_CAUSE_LEASE_EXPIRED: DeadLetterCause
DEAD_LETTER_CAUSE_REJECTED: DeadLetterCause
DEAD_LETTER_CAUSE_UNSPECIFIED: DeadLetterCause
DESCRIPTOR: _descriptor.FileDescriptor
JOB_STATE_BLOCKED: JobState
JOB_STATE_COMPLETED: JobState
JOB_STATE_DEAD: JobState
JOB_STATE_READY: JobState
JOB_STATE_RESERVED: JobState
JOB_STATE_SCHEDULED: JobState
JOB_STATE_UNSPECIFIED: JobState
PARENT_FAILURE_POLICY_CANCEL: ParentFailurePolicy
PARENT_FAILURE_POLICY_RUN: ParentFailurePolicy
PARENT_FAILURE_POLICY_UNSPECIFIED: ParentFailurePolicy
RETRY_BACKOFF_EXPONENTIAL: RetryBackoff
RETRY_BACKOFF_NONE: RetryBackoff
RETRY_BACKOFF_UNSPECIFIED: RetryBackoff

class DeadLetterRecord(_message.Message):
    __slots__ = ["cause", "failed_at", "final_attempt", "job", "last_reason"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    FINAL_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    LAST_REASON_FIELD_NUMBER: _ClassVar[int]
    cause: DeadLetterCause
    failed_at: _timestamp_pb2.Timestamp
    final_attempt: int
    job: Job
    last_reason: str
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., cause: _Optional[_Union[DeadLetterCause, str]] = ..., failed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., final_attempt: _Optional[int] = ..., last_reason: _Optional[str] = ...) -> None: ...

class ItemError(_message.Message):
    __slots__ = ["code", "details", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    details: _containers.RepeatedCompositeFieldContainer[_any_pb2.Any]
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., details: _Optional[_Iterable[_Union[_any_pb2.Any, _Mapping]]] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ["attempt", "completed_at", "custom", "enqueued_at", "expires_at", "history", "id", "job_type", "last_reason", "lease_deadline", "max_attempts", "next_attempt_at", "on_parent_failure", "origin", "parents", "payload", "priority", "progress", "queue", "result", "run_time", "scheduled_at", "started_at", "state", "trace_context", "waiting_children", "waiting_children_total", "worker_id"]
    class CustomEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_FIELD_NUMBER: _ClassVar[int]
    LAST_REASON_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    ON_PARENT_FAILURE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_TIME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    WAITING_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    WAITING_CHILDREN_TOTAL_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    completed_at: _timestamp_pb2.Timestamp
    custom: _containers.ScalarMap[str, str]
    enqueued_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    history: _containers.RepeatedCompositeFieldContainer[JobAttempt]
    id: int
    job_type: str
    last_reason: str
    lease_deadline: _timestamp_pb2.Timestamp
    max_attempts: int
    next_attempt_at: _timestamp_pb2.Timestamp
    on_parent_failure: ParentFailurePolicy
    origin: JobOrigin
    parents: _containers.RepeatedCompositeFieldContainer[JobParent]
    payload: bytes
    priority: int
    progress: Progress
    queue: str
    result: bytes
    run_time: _duration_pb2.Duration
    scheduled_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    state: JobState
    trace_context: TraceContext
    waiting_children: _containers.RepeatedScalarFieldContainer[int]
    waiting_children_total: int
    worker_id: str
    def __init__(self, id: _Optional[int] = ..., queue: _Optional[str] = ..., job_type: _Optional[str] = ..., payload: _Optional[bytes] = ..., priority: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., enqueued_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., scheduled_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., next_attempt_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., custom: _Optional[_Mapping[str, str]] = ..., worker_id: _Optional[str] = ..., lease_deadline: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_reason: _Optional[str] = ..., history: _Optional[_Iterable[_Union[JobAttempt, _Mapping]]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., origin: _Optional[_Union[JobOrigin, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ..., result: _Optional[bytes] = ..., completed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., run_time: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., parents: _Optional[_Iterable[_Union[JobParent, _Mapping]]] = ..., on_parent_failure: _Optional[_Union[ParentFailurePolicy, str]] = ..., waiting_children: _Optional[_Iterable[int]] = ..., waiting_children_total: _Optional[int] = ...) -> None: ...

class JobActionResult(_message.Message):
    __slots__ = ["error", "job_id"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    error: ItemError
    job_id: int
    def __init__(self, job_id: _Optional[int] = ..., error: _Optional[_Union[ItemError, _Mapping]] = ...) -> None: ...

class JobAttempt(_message.Message):
    __slots__ = ["attempt", "directive", "duration", "ended_at", "lease_token", "outcome", "reason", "started_at", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DIRECTIVE_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    directive: str
    duration: _duration_pb2.Duration
    ended_at: _timestamp_pb2.Timestamp
    lease_token: int
    outcome: str
    reason: str
    started_at: _timestamp_pb2.Timestamp
    worker_id: str
    def __init__(self, attempt: _Optional[int] = ..., worker_id: _Optional[str] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., outcome: _Optional[str] = ..., reason: _Optional[str] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease_token: _Optional[int] = ..., directive: _Optional[str] = ...) -> None: ...

class JobContext(_message.Message):
    __slots__ = ["attempt", "job_id", "lease_deadline", "lease_token", "max_attempts", "queue", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    job_id: int
    lease_deadline: _timestamp_pb2.Timestamp
    lease_token: int
    max_attempts: int
    queue: str
    worker_id: str
    def __init__(self, job_id: _Optional[int] = ..., lease_token: _Optional[int] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., lease_deadline: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., queue: _Optional[str] = ..., worker_id: _Optional[str] = ...) -> None: ...

class JobOrigin(_message.Message):
    __slots__ = ["cause", "failed_at", "final_attempt", "job_id", "last_reason", "queue"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    FINAL_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_REASON_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    cause: DeadLetterCause
    failed_at: _timestamp_pb2.Timestamp
    final_attempt: int
    job_id: int
    last_reason: str
    queue: str
    def __init__(self, queue: _Optional[str] = ..., job_id: _Optional[int] = ..., cause: _Optional[_Union[DeadLetterCause, str]] = ..., failed_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_reason: _Optional[str] = ..., final_attempt: _Optional[int] = ...) -> None: ...

class JobParent(_message.Message):
    __slots__ = ["cause", "ended", "job_id", "result", "result_kept", "result_omitted", "state"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RESULT_KEPT_FIELD_NUMBER: _ClassVar[int]
    RESULT_OMITTED_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    cause: DeadLetterCause
    ended: bool
    job_id: int
    result: bytes
    result_kept: bool
    result_omitted: bool
    state: JobState
    def __init__(self, job_id: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., cause: _Optional[_Union[DeadLetterCause, str]] = ..., ended: bool = ..., result_kept: bool = ..., result: _Optional[bytes] = ..., result_omitted: bool = ...) -> None: ...

class MemberFacts(_message.Message):
    __slots__ = ["binary_version", "gomaxprocs", "legacy", "max_command_version", "memory_limit_bytes", "memory_limit_from", "min_command_version", "node_id", "start_time"]
    BINARY_VERSION_FIELD_NUMBER: _ClassVar[int]
    GOMAXPROCS_FIELD_NUMBER: _ClassVar[int]
    LEGACY_FIELD_NUMBER: _ClassVar[int]
    MAX_COMMAND_VERSION_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_FROM_FIELD_NUMBER: _ClassVar[int]
    MIN_COMMAND_VERSION_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    binary_version: str
    gomaxprocs: int
    legacy: bool
    max_command_version: int
    memory_limit_bytes: int
    memory_limit_from: str
    min_command_version: int
    node_id: str
    start_time: _timestamp_pb2.Timestamp
    def __init__(self, node_id: _Optional[str] = ..., binary_version: _Optional[str] = ..., min_command_version: _Optional[int] = ..., max_command_version: _Optional[int] = ..., memory_limit_bytes: _Optional[int] = ..., memory_limit_from: _Optional[str] = ..., gomaxprocs: _Optional[int] = ..., start_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., legacy: bool = ...) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ["grpc_addr", "http_addr", "id", "raft_addr"]
    GRPC_ADDR_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDR_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    RAFT_ADDR_FIELD_NUMBER: _ClassVar[int]
    grpc_addr: str
    http_addr: str
    id: str
    raft_addr: str
    def __init__(self, id: _Optional[str] = ..., raft_addr: _Optional[str] = ..., grpc_addr: _Optional[str] = ..., http_addr: _Optional[str] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ["message", "percent"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PERCENT_FIELD_NUMBER: _ClassVar[int]
    message: str
    percent: int
    def __init__(self, percent: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ReservedJob(_message.Message):
    __slots__ = ["ctx", "job"]
    CTX_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    ctx: JobContext
    job: Job
    def __init__(self, ctx: _Optional[_Union[JobContext, _Mapping]] = ..., job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class TraceContext(_message.Message):
    __slots__ = ["traceparent", "tracestate"]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    traceparent: str
    tracestate: str
    def __init__(self, traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ParentFailurePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DeadLetterCause(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RetryBackoff(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
