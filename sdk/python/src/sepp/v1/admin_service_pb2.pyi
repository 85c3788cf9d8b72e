from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sepp.v1 import queue_service_pb2 as _queue_service_pb2
from sepp.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
PURGE_TARGET_DEAD_LETTERS: PurgeTarget
PURGE_TARGET_UNSPECIFIED: PurgeTarget
PURGE_TARGET_WAITING: PurgeTarget
REDRIVE_STATE_CANCELLED: RedriveState
REDRIVE_STATE_DONE: RedriveState
REDRIVE_STATE_PAUSED: RedriveState
REDRIVE_STATE_RUNNING: RedriveState
REDRIVE_STATE_UNSPECIFIED: RedriveState
SCHEDULE_CATCH_UP_ONCE: ScheduleCatchUp
SCHEDULE_CATCH_UP_SKIP: ScheduleCatchUp
SCHEDULE_CATCH_UP_UNSPECIFIED: ScheduleCatchUp
SCHEDULE_OVERLAP_ALLOW: ScheduleOverlap
SCHEDULE_OVERLAP_SKIP: ScheduleOverlap
SCHEDULE_OVERLAP_UNSPECIFIED: ScheduleOverlap

class CancelJobsRequest(_message.Message):
    __slots__ = ["delete", "job_ids", "reason"]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    delete: bool
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., delete: bool = ..., reason: _Optional[str] = ...) -> None: ...

class CancelJobsResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class CancelRedriveRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class CancelRedriveResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: RedriveTask
    def __init__(self, task: _Optional[_Union[RedriveTask, _Mapping]] = ...) -> None: ...

class CreateQueueRequest(_message.Message):
    __slots__ = ["name", "paused", "settings"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    paused: bool
    settings: QueueSettings
    def __init__(self, name: _Optional[str] = ..., settings: _Optional[_Union[QueueSettings, _Mapping]] = ..., paused: bool = ...) -> None: ...

class CreateQueueResponse(_message.Message):
    __slots__ = ["effective"]
    EFFECTIVE_FIELD_NUMBER: _ClassVar[int]
    effective: _queue_service_pb2.QueueLimits
    def __init__(self, effective: _Optional[_Union[_queue_service_pb2.QueueLimits, _Mapping]] = ...) -> None: ...

class CreateScheduleRequest(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class CreateScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class DeadLetterCount(_message.Message):
    __slots__ = ["cause", "count"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    cause: _types_pb2.DeadLetterCause
    count: int
    def __init__(self, cause: _Optional[_Union[_types_pb2.DeadLetterCause, str]] = ..., count: _Optional[int] = ...) -> None: ...

class DeadLetterJobsRequest(_message.Message):
    __slots__ = ["job_ids", "reason"]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ...) -> None: ...

class DeadLetterJobsResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class DeleteDeadLettersRequest(_message.Message):
    __slots__ = ["job_ids"]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class DeleteDeadLettersResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class DeleteJobsRequest(_message.Message):
    __slots__ = ["job_ids"]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class DeleteJobsResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class DeleteQueueRequest(_message.Message):
    __slots__ = ["force", "name"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    force: bool
    name: str
    def __init__(self, name: _Optional[str] = ..., force: bool = ...) -> None: ...

class DeleteQueueResponse(_message.Message):
    __slots__ = ["dead_letters_removed", "jobs_removed"]
    DEAD_LETTERS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    JOBS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    dead_letters_removed: int
    jobs_removed: int
    def __init__(self, jobs_removed: _Optional[int] = ..., dead_letters_removed: _Optional[int] = ...) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetDeadLetterRequest(_message.Message):
    __slots__ = ["allow_stale", "job_id"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    job_id: int
    def __init__(self, job_id: _Optional[int] = ..., allow_stale: bool = ...) -> None: ...

class GetDeadLetterResponse(_message.Message):
    __slots__ = ["record", "stale"]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    record: _types_pb2.DeadLetterRecord
    stale: bool
    def __init__(self, record: _Optional[_Union[_types_pb2.DeadLetterRecord, _Mapping]] = ..., stale: bool = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ["allow_stale", "job_id"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    job_id: int
    def __init__(self, job_id: _Optional[int] = ..., allow_stale: bool = ...) -> None: ...

class GetJobResponse(_message.Message):
    __slots__ = ["job", "stale"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    job: _types_pb2.Job
    stale: bool
    def __init__(self, job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., stale: bool = ...) -> None: ...

class GetQueueRequest(_message.Message):
    __slots__ = ["allow_stale", "name"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    name: str
    def __init__(self, name: _Optional[str] = ..., allow_stale: bool = ...) -> None: ...

class GetQueueResponse(_message.Message):
    __slots__ = ["effective", "settings", "stale", "summary"]
    EFFECTIVE_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    effective: _queue_service_pb2.QueueLimits
    settings: QueueSettings
    stale: bool
    summary: QueueSummary
    def __init__(self, summary: _Optional[_Union[QueueSummary, _Mapping]] = ..., settings: _Optional[_Union[QueueSettings, _Mapping]] = ..., effective: _Optional[_Union[_queue_service_pb2.QueueLimits, _Mapping]] = ..., stale: bool = ...) -> None: ...

class GetRedriveRequest(_message.Message):
    __slots__ = ["allow_stale", "id"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    id: int
    def __init__(self, id: _Optional[int] = ..., allow_stale: bool = ...) -> None: ...

class GetRedriveResponse(_message.Message):
    __slots__ = ["stale", "task"]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    task: RedriveTask
    def __init__(self, task: _Optional[_Union[RedriveTask, _Mapping]] = ..., stale: bool = ...) -> None: ...

class GetScheduleRequest(_message.Message):
    __slots__ = ["allow_stale", "name", "next_fire_times"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIMES_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    name: str
    next_fire_times: int
    def __init__(self, name: _Optional[str] = ..., next_fire_times: _Optional[int] = ..., allow_stale: bool = ...) -> None: ...

class GetScheduleResponse(_message.Message):
    __slots__ = ["schedule", "stale"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    stale: bool
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., stale: bool = ...) -> None: ...

class JobTemplate(_message.Message):
    __slots__ = ["custom", "job_type", "max_attempts", "payload", "priority", "queue"]
    class CustomEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    custom: _containers.ScalarMap[str, str]
    job_type: str
    max_attempts: int
    payload: bytes
    priority: int
    queue: str
    def __init__(self, queue: _Optional[str] = ..., job_type: _Optional[str] = ..., payload: _Optional[bytes] = ..., priority: _Optional[int] = ..., custom: _Optional[_Mapping[str, str]] = ..., max_attempts: _Optional[int] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ["after_job_id", "allow_stale", "limit", "queue"]
    AFTER_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    after_job_id: int
    allow_stale: bool
    limit: int
    queue: str
    def __init__(self, queue: _Optional[str] = ..., after_job_id: _Optional[int] = ..., limit: _Optional[int] = ..., allow_stale: bool = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ["next_after_job_id", "records", "stale"]
    NEXT_AFTER_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    next_after_job_id: int
    records: _containers.RepeatedCompositeFieldContainer[_types_pb2.DeadLetterRecord]
    stale: bool
    def __init__(self, records: _Optional[_Iterable[_Union[_types_pb2.DeadLetterRecord, _Mapping]]] = ..., next_after_job_id: _Optional[int] = ..., stale: bool = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ["after_job_id", "allow_stale", "limit", "queue", "state"]
    AFTER_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    after_job_id: int
    allow_stale: bool
    limit: int
    queue: str
    state: _types_pb2.JobState
    def __init__(self, queue: _Optional[str] = ..., state: _Optional[_Union[_types_pb2.JobState, str]] = ..., after_job_id: _Optional[int] = ..., limit: _Optional[int] = ..., allow_stale: bool = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ["jobs", "next_after_job_id", "stale"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_AFTER_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_types_pb2.Job]
    next_after_job_id: int
    stale: bool
    def __init__(self, jobs: _Optional[_Iterable[_Union[_types_pb2.Job, _Mapping]]] = ..., next_after_job_id: _Optional[int] = ..., stale: bool = ...) -> None: ...

class ListQueuesRequest(_message.Message):
    __slots__ = ["allow_stale", "tag"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    tag: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, allow_stale: bool = ..., tag: _Optional[_Iterable[str]] = ...) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ["queues", "stale"]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueSummary]
    stale: bool
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueSummary, _Mapping]]] = ..., stale: bool = ...) -> None: ...

class ListRedrivesRequest(_message.Message):
    __slots__ = ["allow_stale"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    def __init__(self, allow_stale: bool = ...) -> None: ...

class ListRedrivesResponse(_message.Message):
    __slots__ = ["stale", "tasks"]
    STALE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    stale: bool
    tasks: _containers.RepeatedCompositeFieldContainer[RedriveTask]
    def __init__(self, tasks: _Optional[_Iterable[_Union[RedriveTask, _Mapping]]] = ..., stale: bool = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ["allow_stale", "next_fire_times"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIMES_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    next_fire_times: int
    def __init__(self, next_fire_times: _Optional[int] = ..., allow_stale: bool = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ["schedules", "stale"]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[Schedule]
    stale: bool
    def __init__(self, schedules: _Optional[_Iterable[_Union[Schedule, _Mapping]]] = ..., stale: bool = ...) -> None: ...

class PauseQueueRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class PauseQueueResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class PauseRedriveRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class PauseRedriveResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: RedriveTask
    def __init__(self, task: _Optional[_Union[RedriveTask, _Mapping]] = ...) -> None: ...

class PauseScheduleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class PauseScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class PreviewRedriveRequest(_message.Message):
    __slots__ = ["redrive", "sample"]
    REDRIVE_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FIELD_NUMBER: _ClassVar[int]
    redrive: StartRedriveRequest
    sample: int
    def __init__(self, redrive: _Optional[_Union[StartRedriveRequest, _Mapping]] = ..., sample: _Optional[int] = ...) -> None: ...

class PreviewRedriveResponse(_message.Message):
    __slots__ = ["matching", "sample"]
    MATCHING_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FIELD_NUMBER: _ClassVar[int]
    matching: int
    sample: _containers.RepeatedCompositeFieldContainer[_types_pb2.DeadLetterRecord]
    def __init__(self, matching: _Optional[int] = ..., sample: _Optional[_Iterable[_Union[_types_pb2.DeadLetterRecord, _Mapping]]] = ...) -> None: ...

class PurgeQueueRequest(_message.Message):
    __slots__ = ["name", "target"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: PurgeTarget
    def __init__(self, name: _Optional[str] = ..., target: _Optional[_Union[PurgeTarget, str]] = ...) -> None: ...

class PurgeQueueResponse(_message.Message):
    __slots__ = ["dead_letters_removed", "jobs_removed"]
    DEAD_LETTERS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    JOBS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    dead_letters_removed: int
    jobs_removed: int
    def __init__(self, jobs_removed: _Optional[int] = ..., dead_letters_removed: _Optional[int] = ...) -> None: ...

class QueueSettings(_message.Message):
    __slots__ = ["completed_retention_ms", "concurrency_key", "dead_letter_queue", "default_max_attempts", "default_priority", "fairness_key", "max_length", "max_memory_bytes", "max_per_key", "max_reserved", "max_schedule_horizon_ms", "max_wait_ms", "rate_burst", "rate_limit", "rate_period_ms", "retry_backoff", "retry_delay_max_ms", "retry_delay_ms", "tags"]
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
    RATE_BURST_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    RATE_PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MAX_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
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
    rate_burst: int
    rate_limit: int
    rate_period_ms: int
    retry_backoff: _types_pb2.RetryBackoff
    retry_delay_max_ms: int
    retry_delay_ms: int
    tags: QueueTags
    def __init__(self, default_priority: _Optional[int] = ..., default_max_attempts: _Optional[int] = ..., retry_delay_ms: _Optional[int] = ..., retry_backoff: _Optional[_Union[_types_pb2.RetryBackoff, str]] = ..., retry_delay_max_ms: _Optional[int] = ..., max_schedule_horizon_ms: _Optional[int] = ..., max_length: _Optional[int] = ..., max_memory_bytes: _Optional[int] = ..., dead_letter_queue: _Optional[str] = ..., max_wait_ms: _Optional[int] = ..., fairness_key: _Optional[str] = ..., max_reserved: _Optional[int] = ..., rate_limit: _Optional[int] = ..., rate_period_ms: _Optional[int] = ..., rate_burst: _Optional[int] = ..., concurrency_key: _Optional[str] = ..., max_per_key: _Optional[int] = ..., tags: _Optional[_Union[QueueTags, _Mapping]] = ..., completed_retention_ms: _Optional[int] = ...) -> None: ...

class QueueSummary(_message.Message):
    __slots__ = ["acked_total", "blocked", "configured", "dead", "dead_lettered_total", "dropped_total", "enqueued_total", "fairness_active_keys", "held_by_key", "keys_at_limit", "name", "oldest_ready_age", "paused", "purged_total", "rate_tokens", "ready", "reserved", "scheduled", "tags"]
    class TagsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACKED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_FIELD_NUMBER: _ClassVar[int]
    CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DROPPED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_ACTIVE_KEYS_FIELD_NUMBER: _ClassVar[int]
    HELD_BY_KEY_FIELD_NUMBER: _ClassVar[int]
    KEYS_AT_LIMIT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OLDEST_READY_AGE_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PURGED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RATE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    acked_total: int
    blocked: int
    configured: bool
    dead: int
    dead_lettered_total: _containers.RepeatedCompositeFieldContainer[DeadLetterCount]
    dropped_total: int
    enqueued_total: int
    fairness_active_keys: int
    held_by_key: int
    keys_at_limit: int
    name: str
    oldest_ready_age: _duration_pb2.Duration
    paused: bool
    purged_total: int
    rate_tokens: int
    ready: int
    reserved: int
    scheduled: int
    tags: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., paused: bool = ..., configured: bool = ..., scheduled: _Optional[int] = ..., ready: _Optional[int] = ..., reserved: _Optional[int] = ..., dead: _Optional[int] = ..., oldest_ready_age: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., enqueued_total: _Optional[int] = ..., acked_total: _Optional[int] = ..., dead_lettered_total: _Optional[_Iterable[_Union[DeadLetterCount, _Mapping]]] = ..., dropped_total: _Optional[int] = ..., rate_tokens: _Optional[int] = ..., keys_at_limit: _Optional[int] = ..., held_by_key: _Optional[int] = ..., purged_total: _Optional[int] = ..., fairness_active_keys: _Optional[int] = ..., tags: _Optional[_Mapping[str, str]] = ..., blocked: _Optional[int] = ...) -> None: ...

class QueueTags(_message.Message):
    __slots__ = ["tags"]
    class TagsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TAGS_FIELD_NUMBER: _ClassVar[int]
    tags: _containers.ScalarMap[str, str]
    def __init__(self, tags: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RedriveSelection(_message.Message):
    __slots__ = ["cause", "failed_after", "failed_before", "job_type", "queue", "reason_contains"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAILED_AFTER_FIELD_NUMBER: _ClassVar[int]
    FAILED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REASON_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    cause: _types_pb2.DeadLetterCause
    failed_after: _timestamp_pb2.Timestamp
    failed_before: _timestamp_pb2.Timestamp
    job_type: str
    queue: str
    reason_contains: str
    def __init__(self, queue: _Optional[str] = ..., cause: _Optional[_Union[_types_pb2.DeadLetterCause, str]] = ..., job_type: _Optional[str] = ..., reason_contains: _Optional[str] = ..., failed_after: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., failed_before: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RedriveTask(_message.Message):
    __slots__ = ["created_at", "created_by", "cursor", "ended_at", "ended_by", "fresh", "id", "last_error", "moved", "rate", "remaining", "selection", "state", "to_queue", "updated_at"]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_BY_FIELD_NUMBER: _ClassVar[int]
    FRESH_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    SELECTION_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TO_QUEUE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    created_by: str
    cursor: int
    ended_at: _timestamp_pb2.Timestamp
    ended_by: str
    fresh: bool
    id: int
    last_error: str
    moved: int
    rate: int
    remaining: int
    selection: RedriveSelection
    state: RedriveState
    to_queue: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[int] = ..., selection: _Optional[_Union[RedriveSelection, _Mapping]] = ..., to_queue: _Optional[str] = ..., fresh: bool = ..., rate: _Optional[int] = ..., state: _Optional[_Union[RedriveState, str]] = ..., moved: _Optional[int] = ..., remaining: _Optional[int] = ..., cursor: _Optional[int] = ..., last_error: _Optional[str] = ..., created_by: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_by: _Optional[str] = ...) -> None: ...

class RequeueDeadLettersRequest(_message.Message):
    __slots__ = ["job_ids"]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class RequeueDeadLettersResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class RescheduleJobsRequest(_message.Message):
    __slots__ = ["job_ids", "run_at"]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    run_at: _timestamp_pb2.Timestamp
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RescheduleJobsResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class ResumeQueueRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ResumeQueueResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ResumeRedriveRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ResumeRedriveResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: RedriveTask
    def __init__(self, task: _Optional[_Union[RedriveTask, _Mapping]] = ...) -> None: ...

class ResumeScheduleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ResumeScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class RunJobsNowRequest(_message.Message):
    __slots__ = ["job_ids"]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class RunJobsNowResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ["catch_up", "created_at", "cron", "fired", "interval", "last_fire_time", "last_job_id", "name", "next_fire_times", "overlap", "paused", "skipped", "template", "time_zone", "updated_at"]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    FIRED_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_FIELD_NUMBER: _ClassVar[int]
    LAST_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIMES_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    catch_up: ScheduleCatchUp
    created_at: _timestamp_pb2.Timestamp
    cron: str
    fired: int
    interval: _duration_pb2.Duration
    last_fire_time: _timestamp_pb2.Timestamp
    last_job_id: int
    name: str
    next_fire_times: _containers.RepeatedCompositeFieldContainer[_timestamp_pb2.Timestamp]
    overlap: ScheduleOverlap
    paused: bool
    skipped: int
    template: JobTemplate
    time_zone: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., cron: _Optional[str] = ..., interval: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., time_zone: _Optional[str] = ..., template: _Optional[_Union[JobTemplate, _Mapping]] = ..., overlap: _Optional[_Union[ScheduleOverlap, str]] = ..., catch_up: _Optional[_Union[ScheduleCatchUp, str]] = ..., paused: bool = ..., next_fire_times: _Optional[_Iterable[_Union[_timestamp_pb2.Timestamp, _Mapping]]] = ..., last_fire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_job_id: _Optional[int] = ..., fired: _Optional[int] = ..., skipped: _Optional[int] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SetJobsPriorityRequest(_message.Message):
    __slots__ = ["job_ids", "priority"]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    priority: int
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., priority: _Optional[int] = ...) -> None: ...

class SetJobsPriorityResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobActionResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_types_pb2.JobActionResult, _Mapping]]] = ...) -> None: ...

class StartRedriveRequest(_message.Message):
    __slots__ = ["fresh", "rate", "selection", "to_queue"]
    FRESH_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    SELECTION_FIELD_NUMBER: _ClassVar[int]
    TO_QUEUE_FIELD_NUMBER: _ClassVar[int]
    fresh: bool
    rate: int
    selection: RedriveSelection
    to_queue: str
    def __init__(self, selection: _Optional[_Union[RedriveSelection, _Mapping]] = ..., to_queue: _Optional[str] = ..., fresh: bool = ..., rate: _Optional[int] = ...) -> None: ...

class StartRedriveResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: RedriveTask
    def __init__(self, task: _Optional[_Union[RedriveTask, _Mapping]] = ...) -> None: ...

class UpdateQueueRequest(_message.Message):
    __slots__ = ["inherit", "name", "paused", "settings"]
    INHERIT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    inherit: _containers.RepeatedScalarFieldContainer[str]
    name: str
    paused: bool
    settings: QueueSettings
    def __init__(self, name: _Optional[str] = ..., settings: _Optional[_Union[QueueSettings, _Mapping]] = ..., inherit: _Optional[_Iterable[str]] = ..., paused: bool = ...) -> None: ...

class UpdateQueueResponse(_message.Message):
    __slots__ = ["effective"]
    EFFECTIVE_FIELD_NUMBER: _ClassVar[int]
    effective: _queue_service_pb2.QueueLimits
    def __init__(self, effective: _Optional[_Union[_queue_service_pb2.QueueLimits, _Mapping]] = ...) -> None: ...

class UpdateScheduleRequest(_message.Message):
    __slots__ = ["schedule", "update_mask"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class UpdateScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class PurgeTarget(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RedriveState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ScheduleOverlap(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ScheduleCatchUp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
