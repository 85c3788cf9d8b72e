from google.protobuf import duration_pb2 as _duration_pb2
from sepp.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

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
    __slots__ = ["allow_stale"]
    ALLOW_STALE_FIELD_NUMBER: _ClassVar[int]
    allow_stale: bool
    def __init__(self, allow_stale: bool = ...) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ["queues", "stale"]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueSummary]
    stale: bool
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueSummary, _Mapping]]] = ..., stale: bool = ...) -> None: ...

class PauseQueueRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class PauseQueueResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class QueueSummary(_message.Message):
    __slots__ = ["acked_total", "configured", "dead", "dead_lettered_total", "dropped_total", "enqueued_total", "name", "oldest_ready_age", "paused", "ready", "reserved", "scheduled"]
    ACKED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DROPPED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OLDEST_READY_AGE_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    acked_total: int
    configured: bool
    dead: int
    dead_lettered_total: _containers.RepeatedCompositeFieldContainer[DeadLetterCount]
    dropped_total: int
    enqueued_total: int
    name: str
    oldest_ready_age: _duration_pb2.Duration
    paused: bool
    ready: int
    reserved: int
    scheduled: int
    def __init__(self, name: _Optional[str] = ..., paused: bool = ..., configured: bool = ..., scheduled: _Optional[int] = ..., ready: _Optional[int] = ..., reserved: _Optional[int] = ..., dead: _Optional[int] = ..., oldest_ready_age: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., enqueued_total: _Optional[int] = ..., acked_total: _Optional[int] = ..., dead_lettered_total: _Optional[_Iterable[_Union[DeadLetterCount, _Mapping]]] = ..., dropped_total: _Optional[int] = ...) -> None: ...

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

class ResumeQueueRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ResumeQueueResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...
