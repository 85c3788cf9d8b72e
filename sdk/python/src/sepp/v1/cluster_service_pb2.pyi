from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from sepp.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClockOffset(_message.Message):
    __slots__ = ["error", "offset"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: _duration_pb2.Duration
    offset: _duration_pb2.Duration
    def __init__(self, offset: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., error: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ClusterMember(_message.Message):
    __slots__ = ["clock", "facts", "healthy", "last_contact", "leader", "node", "voter"]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    LAST_CONTACT_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    VOTER_FIELD_NUMBER: _ClassVar[int]
    clock: ClockOffset
    facts: _types_pb2.MemberFacts
    healthy: bool
    last_contact: str
    leader: bool
    node: _types_pb2.NodeInfo
    voter: bool
    def __init__(self, node: _Optional[_Union[_types_pb2.NodeInfo, _Mapping]] = ..., voter: bool = ..., leader: bool = ..., healthy: bool = ..., last_contact: _Optional[str] = ..., facts: _Optional[_Union[_types_pb2.MemberFacts, _Mapping]] = ..., clock: _Optional[_Union[ClockOffset, _Mapping]] = ...) -> None: ...

class GetMemberFactsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetMemberFactsResponse(_message.Message):
    __slots__ = ["clock", "facts"]
    CLOCK_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    clock: _timestamp_pb2.Timestamp
    facts: _types_pb2.MemberFacts
    def __init__(self, facts: _Optional[_Union[_types_pb2.MemberFacts, _Mapping]] = ..., clock: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class JoinRequest(_message.Message):
    __slots__ = ["node"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _types_pb2.NodeInfo
    def __init__(self, node: _Optional[_Union[_types_pb2.NodeInfo, _Mapping]] = ...) -> None: ...

class JoinResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RemoveRequest(_message.Message):
    __slots__ = ["node_id"]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    def __init__(self, node_id: _Optional[str] = ...) -> None: ...

class RemoveResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ["include_digest"]
    INCLUDE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    include_digest: bool
    def __init__(self, include_digest: bool = ...) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ["applied_index", "clock_skew", "commit_index", "digest_index", "last_log_index", "leader", "max_clock_skew", "members", "self", "state", "state_digest", "term"]
    APPLIED_INDEX_FIELD_NUMBER: _ClassVar[int]
    CLOCK_SKEW_FIELD_NUMBER: _ClassVar[int]
    COMMIT_INDEX_FIELD_NUMBER: _ClassVar[int]
    DIGEST_INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_LOG_INDEX_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    MAX_CLOCK_SKEW_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    SELF_FIELD_NUMBER: _ClassVar[int]
    STATE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    applied_index: int
    clock_skew: str
    commit_index: int
    digest_index: int
    last_log_index: int
    leader: _types_pb2.NodeInfo
    max_clock_skew: _duration_pb2.Duration
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    self: _types_pb2.NodeInfo
    state: str
    state_digest: str
    term: int
    def __init__(self, self_: _Optional[_Union[_types_pb2.NodeInfo, _Mapping]] = ..., leader: _Optional[_Union[_types_pb2.NodeInfo, _Mapping]] = ..., state: _Optional[str] = ..., term: _Optional[int] = ..., commit_index: _Optional[int] = ..., applied_index: _Optional[int] = ..., last_log_index: _Optional[int] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ..., state_digest: _Optional[str] = ..., digest_index: _Optional[int] = ..., max_clock_skew: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., clock_skew: _Optional[str] = ...) -> None: ...

class TransferLeadershipRequest(_message.Message):
    __slots__ = ["to_node_id"]
    TO_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    to_node_id: str
    def __init__(self, to_node_id: _Optional[str] = ...) -> None: ...

class TransferLeadershipResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...
