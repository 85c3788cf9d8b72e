from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import empty_pb2 as _empty_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sepp.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AckBatchRequest(_message.Message):
    __slots__ = ["ctxs"]
    CTXS_FIELD_NUMBER: _ClassVar[int]
    ctxs: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobContext]
    def __init__(self, ctxs: _Optional[_Iterable[_Union[_types_pb2.JobContext, _Mapping]]] = ...) -> None: ...

class AckBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AckBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AckBatchResult, _Mapping]]] = ...) -> None: ...

class AckBatchResult(_message.Message):
    __slots__ = ["error"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    error: _types_pb2.ItemError
    def __init__(self, error: _Optional[_Union[_types_pb2.ItemError, _Mapping]] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ["ctx", "follow_ups", "result"]
    CTX_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_UPS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ctx: _types_pb2.JobContext
    follow_ups: _containers.RepeatedCompositeFieldContainer[EnqueueRequest]
    result: bytes
    def __init__(self, ctx: _Optional[_Union[_types_pb2.JobContext, _Mapping]] = ..., result: _Optional[bytes] = ..., follow_ups: _Optional[_Iterable[_Union[EnqueueRequest, _Mapping]]] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ["follow_ups"]
    FOLLOW_UPS_FIELD_NUMBER: _ClassVar[int]
    follow_ups: _containers.RepeatedCompositeFieldContainer[EnqueueResponse]
    def __init__(self, follow_ups: _Optional[_Iterable[_Union[EnqueueResponse, _Mapping]]] = ...) -> None: ...

class Capability(_message.Message):
    __slots__ = ["cluster_ready", "command_version", "name"]
    CLUSTER_READY_FIELD_NUMBER: _ClassVar[int]
    COMMAND_VERSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    cluster_ready: bool
    command_version: int
    name: str
    def __init__(self, name: _Optional[str] = ..., command_version: _Optional[int] = ..., cluster_ready: bool = ...) -> None: ...

class DrainDeadLettersRequest(_message.Message):
    __slots__ = ["max", "queue"]
    MAX_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    max: int
    queue: str
    def __init__(self, queue: _Optional[str] = ..., max: _Optional[int] = ...) -> None: ...

class DrainDeadLettersResponse(_message.Message):
    __slots__ = ["dead_letter_retention_enabled", "dropped_total", "records"]
    DEAD_LETTER_RETENTION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    dead_letter_retention_enabled: bool
    dropped_total: int
    records: _containers.RepeatedCompositeFieldContainer[_types_pb2.DeadLetterRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[_types_pb2.DeadLetterRecord, _Mapping]]] = ..., dead_letter_retention_enabled: bool = ..., dropped_total: _Optional[int] = ...) -> None: ...

class EnqueueBatchRequest(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[EnqueueRequest]
    def __init__(self, jobs: _Optional[_Iterable[_Union[EnqueueRequest, _Mapping]]] = ...) -> None: ...

class EnqueueBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EnqueueBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[EnqueueBatchResult, _Mapping]]] = ...) -> None: ...

class EnqueueBatchResult(_message.Message):
    __slots__ = ["enqueued", "error"]
    ENQUEUED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    enqueued: EnqueueResponse
    error: _types_pb2.ItemError
    def __init__(self, enqueued: _Optional[_Union[EnqueueResponse, _Mapping]] = ..., error: _Optional[_Union[_types_pb2.ItemError, _Mapping]] = ...) -> None: ...

class EnqueueRequest(_message.Message):
    __slots__ = ["after", "custom", "expires_at", "idempotency_key", "job_type", "max_attempts", "on_parent_failure", "payload", "priority", "queue", "scheduled_at", "trace_context", "ttl_ms", "unique"]
    class CustomEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AFTER_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ON_PARENT_FAILURE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_AT_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedScalarFieldContainer[int]
    custom: _containers.ScalarMap[str, str]
    expires_at: _timestamp_pb2.Timestamp
    idempotency_key: str
    job_type: str
    max_attempts: int
    on_parent_failure: _types_pb2.ParentFailurePolicy
    payload: bytes
    priority: int
    queue: str
    scheduled_at: _timestamp_pb2.Timestamp
    trace_context: _types_pb2.TraceContext
    ttl_ms: int
    unique: UniqueOptions
    def __init__(self, queue: _Optional[str] = ..., job_type: _Optional[str] = ..., payload: _Optional[bytes] = ..., priority: _Optional[int] = ..., scheduled_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., max_attempts: _Optional[int] = ..., custom: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ..., unique: _Optional[_Union[UniqueOptions, _Mapping]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ttl_ms: _Optional[int] = ..., trace_context: _Optional[_Union[_types_pb2.TraceContext, _Mapping]] = ..., after: _Optional[_Iterable[int]] = ..., on_parent_failure: _Optional[_Union[_types_pb2.ParentFailurePolicy, str]] = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ["duplicate", "job_id", "state"]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    duplicate: bool
    job_id: int
    state: _types_pb2.JobState
    def __init__(self, job_id: _Optional[int] = ..., state: _Optional[_Union[_types_pb2.JobState, str]] = ..., duplicate: bool = ...) -> None: ...

class ExtendLeaseRequest(_message.Message):
    __slots__ = ["ctx", "lease", "progress"]
    CTX_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    ctx: _types_pb2.JobContext
    lease: _duration_pb2.Duration
    progress: _types_pb2.Progress
    def __init__(self, ctx: _Optional[_Union[_types_pb2.JobContext, _Mapping]] = ..., lease: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., progress: _Optional[_Union[_types_pb2.Progress, _Mapping]] = ...) -> None: ...

class ExtendLeaseResponse(_message.Message):
    __slots__ = ["lease_deadline"]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    lease_deadline: _timestamp_pb2.Timestamp
    def __init__(self, lease_deadline: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetServerInfoRequest(_message.Message):
    __slots__ = ["allow_stale"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    def __init__(self, allow_stale: bool = ...) -> None: ...

class GetServerInfoResponse(_message.Message):
    __slots__ = ["capabilities", "dead_letter_retention_enabled", "dead_letter_retention_ms", "leader_grpc_addr", "leader_id", "limits", "max_reserve_batch", "max_schedule_horizon_ms", "members", "node_id", "queues", "stale", "version"]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_RETENTION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    LEADER_GRPC_ADDR_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVE_BATCH_FIELD_NUMBER: _ClassVar[int]
    MAX_SCHEDULE_HORIZON_MS_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    capabilities: _containers.RepeatedCompositeFieldContainer[Capability]
    dead_letter_retention_enabled: bool
    dead_letter_retention_ms: int
    leader_grpc_addr: str
    leader_id: str
    limits: Limits
    max_reserve_batch: int
    max_schedule_horizon_ms: int
    members: _containers.RepeatedCompositeFieldContainer[_types_pb2.MemberFacts]
    node_id: str
    queues: _containers.RepeatedCompositeFieldContainer[QueueLimits]
    stale: bool
    version: str
    def __init__(self, version: _Optional[str] = ..., node_id: _Optional[str] = ..., leader_id: _Optional[str] = ..., leader_grpc_addr: _Optional[str] = ..., stale: bool = ..., dead_letter_retention_enabled: bool = ..., dead_letter_retention_ms: _Optional[int] = ..., max_reserve_batch: _Optional[int] = ..., max_schedule_horizon_ms: _Optional[int] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., queues: _Optional[_Iterable[_Union[QueueLimits, _Mapping]]] = ..., members: _Optional[_Iterable[_Union[_types_pb2.MemberFacts, _Mapping]]] = ..., capabilities: _Optional[_Iterable[_Union[Capability, _Mapping]]] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ["completed_retention_ms", "default_lease_ms", "default_max_attempts", "default_priority", "disk_held_bytes", "idempotency_window_ms", "max_attempts_ceiling", "max_batch_size", "max_custom_field_bytes", "max_custom_fields", "max_disk_bytes", "max_job_type_bytes", "max_lease_ms", "max_memory_bytes", "max_message_bytes", "max_payload_bytes", "max_priority", "max_progress_message_bytes", "max_queue_length", "max_queue_name_bytes", "max_reserve_batch", "max_reserve_wait_ms", "max_result_bytes", "max_schedule_horizon_ms", "memory_held_bytes", "min_priority", "payload_store_bytes", "payloads_off_heap", "retry_backoff", "retry_delay_max_ms", "retry_delay_ms", "snapshot_checkpoint_pinned_bytes", "strict"]
    COMPLETED_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_LEASE_MS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    DISK_HELD_BYTES_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_CEILING_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_CUSTOM_FIELDS_FIELD_NUMBER: _ClassVar[int]
    MAX_CUSTOM_FIELD_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_DISK_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_JOB_TYPE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_LEASE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MAX_PROGRESS_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUE_NAME_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVE_BATCH_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVE_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_SCHEDULE_HORIZON_MS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_HELD_BYTES_FIELD_NUMBER: _ClassVar[int]
    MIN_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PAYLOADS_OFF_HEAP_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_STORE_BYTES_FIELD_NUMBER: _ClassVar[int]
    RETRY_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MAX_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_CHECKPOINT_PINNED_BYTES_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    completed_retention_ms: int
    default_lease_ms: int
    default_max_attempts: int
    default_priority: int
    disk_held_bytes: int
    idempotency_window_ms: int
    max_attempts_ceiling: int
    max_batch_size: int
    max_custom_field_bytes: int
    max_custom_fields: int
    max_disk_bytes: int
    max_job_type_bytes: int
    max_lease_ms: int
    max_memory_bytes: int
    max_message_bytes: int
    max_payload_bytes: int
    max_priority: int
    max_progress_message_bytes: int
    max_queue_length: int
    max_queue_name_bytes: int
    max_reserve_batch: int
    max_reserve_wait_ms: int
    max_result_bytes: int
    max_schedule_horizon_ms: int
    memory_held_bytes: int
    min_priority: int
    payload_store_bytes: int
    payloads_off_heap: bool
    retry_backoff: _types_pb2.RetryBackoff
    retry_delay_max_ms: int
    retry_delay_ms: int
    snapshot_checkpoint_pinned_bytes: int
    strict: bool
    def __init__(self, min_priority: _Optional[int] = ..., max_priority: _Optional[int] = ..., default_priority: _Optional[int] = ..., default_max_attempts: _Optional[int] = ..., max_attempts_ceiling: _Optional[int] = ..., retry_delay_ms: _Optional[int] = ..., retry_backoff: _Optional[_Union[_types_pb2.RetryBackoff, str]] = ..., retry_delay_max_ms: _Optional[int] = ..., max_schedule_horizon_ms: _Optional[int] = ..., max_reserve_batch: _Optional[int] = ..., default_lease_ms: _Optional[int] = ..., max_lease_ms: _Optional[int] = ..., max_reserve_wait_ms: _Optional[int] = ..., max_payload_bytes: _Optional[int] = ..., max_batch_size: _Optional[int] = ..., max_custom_fields: _Optional[int] = ..., max_custom_field_bytes: _Optional[int] = ..., max_job_type_bytes: _Optional[int] = ..., max_queue_name_bytes: _Optional[int] = ..., max_message_bytes: _Optional[int] = ..., idempotency_window_ms: _Optional[int] = ..., max_queue_length: _Optional[int] = ..., strict: bool = ..., max_memory_bytes: _Optional[int] = ..., memory_held_bytes: _Optional[int] = ..., max_disk_bytes: _Optional[int] = ..., disk_held_bytes: _Optional[int] = ..., payloads_off_heap: bool = ..., payload_store_bytes: _Optional[int] = ..., max_result_bytes: _Optional[int] = ..., completed_retention_ms: _Optional[int] = ..., max_progress_message_bytes: _Optional[int] = ..., snapshot_checkpoint_pinned_bytes: _Optional[int] = ...) -> None: ...

class NackRequest(_message.Message):
    __slots__ = ["ctx", "directive", "reason"]
    CTX_FIELD_NUMBER: _ClassVar[int]
    DIRECTIVE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ctx: _types_pb2.JobContext
    directive: RetryDirective
    reason: str
    def __init__(self, ctx: _Optional[_Union[_types_pb2.JobContext, _Mapping]] = ..., directive: _Optional[_Union[RetryDirective, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class NackResponse(_message.Message):
    __slots__ = ["dead_lettered", "next_attempt_at"]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    dead_lettered: bool
    next_attempt_at: _timestamp_pb2.Timestamp
    def __init__(self, dead_lettered: bool = ..., next_attempt_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class QueueLimits(_message.Message):
    __slots__ = ["completed_retention_ms", "concurrency_key", "dead_letter_queue", "default_max_attempts", "default_priority", "fairness_key", "max_length", "max_memory_bytes", "max_per_key", "max_reserved", "max_schedule_horizon_ms", "max_wait_ms", "name", "rate_burst", "rate_limit", "rate_period_ms", "retry_backoff", "retry_delay_max_ms", "retry_delay_ms"]
    COMPLETED_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_QUEUE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVED_FIELD_NUMBER: _ClassVar[int]
    MAX_SCHEDULE_HORIZON_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RATE_BURST_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    RATE_PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MAX_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    completed_retention_ms: int
    concurrency_key: str
    dead_letter_queue: str
    default_max_attempts: int
    default_priority: int
    fairness_key: str
    max_length: int
    max_memory_bytes: int
    max_per_key: int
    max_reserved: int
    max_schedule_horizon_ms: int
    max_wait_ms: int
    name: str
    rate_burst: int
    rate_limit: int
    rate_period_ms: int
    retry_backoff: _types_pb2.RetryBackoff
    retry_delay_max_ms: int
    retry_delay_ms: int
    def __init__(self, name: _Optional[str] = ..., default_priority: _Optional[int] = ..., default_max_attempts: _Optional[int] = ..., retry_delay_ms: _Optional[int] = ..., retry_backoff: _Optional[_Union[_types_pb2.RetryBackoff, str]] = ..., retry_delay_max_ms: _Optional[int] = ..., max_schedule_horizon_ms: _Optional[int] = ..., max_length: _Optional[int] = ..., dead_letter_queue: _Optional[str] = ..., max_memory_bytes: _Optional[int] = ..., max_reserved: _Optional[int] = ..., rate_limit: _Optional[int] = ..., rate_period_ms: _Optional[int] = ..., rate_burst: _Optional[int] = ..., concurrency_key: _Optional[str] = ..., max_per_key: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., fairness_key: _Optional[str] = ..., completed_retention_ms: _Optional[int] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ["ctx"]
    CTX_FIELD_NUMBER: _ClassVar[int]
    ctx: _types_pb2.JobContext
    def __init__(self, ctx: _Optional[_Union[_types_pb2.JobContext, _Mapping]] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ReserveRequest(_message.Message):
    __slots__ = ["lease", "max", "queue", "request_id", "wait", "worker_id"]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    lease: _duration_pb2.Duration
    max: int
    queue: str
    request_id: str
    wait: _duration_pb2.Duration
    worker_id: str
    def __init__(self, queue: _Optional[str] = ..., worker_id: _Optional[str] = ..., max: _Optional[int] = ..., lease: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class ReserveResponse(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_types_pb2.ReservedJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_types_pb2.ReservedJob, _Mapping]]] = ...) -> None: ...

class RetryDirective(_message.Message):
    __slots__ = ["after", "dead_letter", "default"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    after: _duration_pb2.Duration
    dead_letter: _empty_pb2.Empty
    default: _empty_pb2.Empty
    def __init__(self, default: _Optional[_Union[_empty_pb2.Empty, _Mapping]] = ..., after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., dead_letter: _Optional[_Union[_empty_pb2.Empty, _Mapping]] = ...) -> None: ...

class UniqueOptions(_message.Message):
    __slots__ = ["completed_for_ms", "cover_dead", "fields", "key", "refuse"]
    COMPLETED_FOR_MS_FIELD_NUMBER: _ClassVar[int]
    COVER_DEAD_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    REFUSE_FIELD_NUMBER: _ClassVar[int]
    completed_for_ms: int
    cover_dead: bool
    fields: _containers.RepeatedScalarFieldContainer[str]
    key: str
    refuse: bool
    def __init__(self, key: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., cover_dead: bool = ..., completed_for_ms: _Optional[int] = ..., refuse: bool = ...) -> None: ...

class WaitJobRequest(_message.Message):
    __slots__ = ["job_id", "timeout_ms"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    timeout_ms: int
    def __init__(self, job_id: _Optional[int] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class WaitJobResponse(_message.Message):
    __slots__ = ["cause", "finished_at", "job", "result", "state", "terminal"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_FIELD_NUMBER: _ClassVar[int]
    cause: _types_pb2.DeadLetterCause
    finished_at: _timestamp_pb2.Timestamp
    job: _types_pb2.Job
    result: bytes
    state: _types_pb2.JobState
    terminal: bool
    def __init__(self, job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., terminal: bool = ..., state: _Optional[_Union[_types_pb2.JobState, str]] = ..., result: _Optional[bytes] = ..., cause: _Optional[_Union[_types_pb2.DeadLetterCause, str]] = ..., finished_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
