// sepp: a TypeScript client for the sepp job queue over the Connect
// protocol (unary JSON POSTs over fetch). No run-time dependencies.
export { SeppClient, Producer } from "./client.js";
export type { ClientOptions, CallOptions, ReserveOptions, ListOptions, ScheduleReadOptions, BatchResult, ProducerOptions } from "./client.js";
export type {
  QueueStats,
  QueueSettings,
  EffectiveQueueSettings,
  QueueInfo,
  QueueUpdate,
  QueueRemoval,
  PurgeTarget,
  ActionResult,
  RedriveState,
  RedriveSelection,
  RedriveOptions,
  RedriveTask,
} from "./admin.js";
export { Worker, HandlerError, retry, retryAfter, permanent } from "./worker.js";
export type { Completion, Handler, HandlerErrorKind, WorkerDelivery, WorkerOptions } from "./worker.js";
export { Priority, RetryDirective, DeadLetterRecord } from "./types.js";
export type {
  JobId,
  JobState,
  DeadLetterCause,
  EnqueueRequest,
  EnqueueResult,
  UniqueOptions,
  TraceContext,
  Progress,
  Job,
  JobParent,
  ParentFailurePolicy,
  ParentResult,
  JobAttempt,
  JobOrigin,
  JobContext,
  JobOutcome,
  Delivery,
  ServerInfo,
  JobTemplate,
  ScheduleDefinition,
  Schedule,
  ScheduleOverlap,
  ScheduleCatchUp,
} from "./types.js";
export {
  SeppError,
  InvalidArgumentError,
  ScheduledTooFarError,
  NotFoundError,
  AlreadyExistsError,
  UniqueConflictError,
  LeaseLostError,
  JobCancelledError,
  WrongStateError,
  ResourceExhaustedError,
  QueueFullError,
  UnavailableError,
  NotLeaderError,
  UnknownOutcomeError,
  PermissionDeniedError,
  UnauthenticatedError,
  ClosedError,
  CanceledError,
  InternalError,
} from "./errors.js";
export type { Code } from "./errors.js";
export type { ErrorDetail } from "./wire.js";
