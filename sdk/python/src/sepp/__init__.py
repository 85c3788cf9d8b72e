"""sepp: the asyncio Python client of the sepp job queue.

    from sepp import SeppClient, EnqueueRequest, Priority

    client = await SeppClient.connect("http://localhost:50051")
    await client.enqueue(EnqueueRequest("emails", "password_reset", priority=Priority.MAX))

The generated protobuf modules are sepp.v1 (the API, from proto/sepp/v1)
and sepp.googlerpc (the google.rpc status and error details).
"""

from sepp.client import SeppClient, new_key
from sepp.errors import (AlreadyExists, ClientClosed, InternalError, InvalidArgument, InvalidField, JobCancelled,
                         LeaseLost, NotFound,
                         NotLeader, PermissionDenied, QueueFull, ResourceExhausted, ScheduledTooFar, SeppError,
                         Unauthenticated, Unavailable, UniqueConflict, UnknownOutcome, WrongState)
from sepp.producer import Producer
from sepp.types import (ActionResult, BatchResult, ClusterMember, ClusterStatus, Completion, DeadLetterCause,
                        DeadLetterRecord,
                        Delivery, EnqueueRequest, EnqueueResult, Job, JobAttempt, JobContext, JobOrigin, JobOutcome,
                        JobState,
                        JobParent, JobTemplate, ParentFailure, ParentResult, Progress,
                        NodeInfo, Priority, PurgeTarget, QueueInfo, QueueRemoval, QueueSettings, QueueStats,
                        RedriveOptions, RedrivePreview, RedriveSelection, RedriveState, RedriveTask, RetryDirective,
                        Schedule, ScheduleCatchUp, ScheduleDefinition, ScheduleOverlap, ServerInfo, TraceContext,
                        UniqueOptions)
from sepp.worker import Handler, HandlerError, Permanent, Retry, RetryAfter, Worker

__version__ = "0.1.0"

__all__ = [
    "SeppClient", "new_key", "Producer", "Worker", "Handler", "HandlerError", "Retry", "RetryAfter", "Permanent",
    "EnqueueRequest", "EnqueueResult", "BatchResult", "Completion", "Priority", "JobState", "DeadLetterCause",
    "RetryDirective",
    "Job", "JobAttempt", "JobOrigin", "JobContext", "JobOutcome", "Delivery", "DeadLetterRecord", "ServerInfo",
    "QueueStats",
    "ActionResult", "JobParent", "ParentFailure", "ParentResult",
    "NodeInfo", "ClusterMember", "ClusterStatus", "UniqueOptions", "JobTemplate", "ScheduleDefinition", "Schedule",
    "ScheduleOverlap", "ScheduleCatchUp", "QueueSettings", "QueueInfo", "QueueRemoval", "PurgeTarget",
    "RedriveState", "RedriveSelection", "RedriveOptions", "RedriveTask", "RedrivePreview", "TraceContext", "Progress",
    "SeppError", "InvalidArgument", "InvalidField", "ScheduledTooFar", "NotFound", "AlreadyExists", "UniqueConflict",
    "LeaseLost", "JobCancelled", "WrongState",
    "ResourceExhausted", "QueueFull", "Unavailable", "NotLeader", "UnknownOutcome", "PermissionDenied",
    "Unauthenticated", "ClientClosed", "InternalError",
]
