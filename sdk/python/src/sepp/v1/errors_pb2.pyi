from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FieldViolation(_message.Message):
    __slots__ = ["description", "field", "limit"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    description: str
    field: str
    limit: str
    def __init__(self, field: _Optional[str] = ..., limit: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class NotLeader(_message.Message):
    __slots__ = ["leader_grpc_addr", "leader_http_addr", "leader_id"]
    LEADER_GRPC_ADDR_FIELD_NUMBER: _ClassVar[int]
    LEADER_HTTP_ADDR_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    leader_grpc_addr: str
    leader_http_addr: str
    leader_id: str
    def __init__(self, leader_id: _Optional[str] = ..., leader_grpc_addr: _Optional[str] = ..., leader_http_addr: _Optional[str] = ...) -> None: ...

class ScheduledTooFar(_message.Message):
    __slots__ = ["horizon_ms", "latest_allowed", "queue", "requested_at"]
    HORIZON_MS_FIELD_NUMBER: _ClassVar[int]
    LATEST_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    horizon_ms: int
    latest_allowed: _timestamp_pb2.Timestamp
    queue: str
    requested_at: _timestamp_pb2.Timestamp
    def __init__(self, queue: _Optional[str] = ..., horizon_ms: _Optional[int] = ..., requested_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., latest_allowed: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class UnknownOutcome(_message.Message):
    __slots__ = ["reason"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...
