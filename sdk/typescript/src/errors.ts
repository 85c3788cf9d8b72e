import { ErrorDetail } from "./wire.js";

/** The Connect (gRPC) status codes, as the protocol names them. */
export type Code =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

const codeNumbers: Code[] = [
  "canceled", // 0 is OK; index 0 is never looked up
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
];

/** The Code of a gRPC numeric code (batch items carry numbers). */
export function codeFromNumber(n: number): Code {
  return codeNumbers[n] ?? "unknown";
}

/**
 * A failed call. Every error the client throws for a call is a SeppError;
 * its subclass says what it means (test with instanceof), `code` is the
 * server's status code, `details` what the server attached.
 */
export class SeppError extends Error {
  override name = "SeppError";
  constructor(
    /** "enqueue", "reserve", "ack", ... */
    readonly op: string,
    readonly code: Code,
    message: string,
    readonly details: ErrorDetail[] = [],
    options?: { cause?: unknown },
  ) {
    super(`sepp ${op}: ${code}: ${message}`);
    this.rawMessage = message;
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
  /** The server's message alone. */
  readonly rawMessage: string;
}

/** The request broke a rule; nothing changed. `field` and `limit` name it. */
export class InvalidArgumentError extends SeppError {
  override name = "InvalidArgumentError";
  /** e.g. "priority", "jobs[3].queue"; empty when the server named none. */
  readonly field: string;
  /** e.g. "0..9"; empty when not a numeric limit. */
  readonly limit: string;
  readonly description: string;
  constructor(op: string, code: Code, message: string, details: ErrorDetail[] = []) {
    super(op, code, message, details);
    const { field, limit, description } = fieldViolationOf(details);
    this.field = field;
    this.limit = limit;
    this.description = description || message;
  }
}

/** The request field a status's details name (sepp.v1.FieldViolation, else
 * the first of google.rpc.BadRequest); empty strings when none. */
function fieldViolationOf(details: ErrorDetail[]): { field: string; limit: string; description: string } {
  for (const d of details) {
    if (d.type === "sepp.v1.FieldViolation" && "field" in d) {
      return { field: d.field, limit: d.limit, description: d.description };
    }
  }
  for (const d of details) {
    if (d.type === "google.rpc.BadRequest" && "fieldViolations" in d && d.fieldViolations.length > 0) {
      return { field: d.fieldViolations[0]!.field, limit: "", description: d.fieldViolations[0]!.description };
    }
  }
  return { field: "", limit: "", description: "" };
}

/** scheduledAt lies beyond the queue's schedule horizon. */
export class ScheduledTooFarError extends InvalidArgumentError {
  override name = "ScheduledTooFarError";
  readonly queue: string;
  /** The queue's max_schedule_horizon_ms. */
  readonly horizonMs: number;
  readonly requestedAt?: Date;
  /** The latest scheduledAt the server would accept. */
  readonly latestAllowed?: Date;
  constructor(op: string, code: Code, message: string, details: ErrorDetail[]) {
    super(op, code, message, details);
    const d = details.find((x) => x.type === "sepp.v1.ScheduledTooFar") as
      | Extract<ErrorDetail, { type: "sepp.v1.ScheduledTooFar" }>
      | undefined;
    this.queue = d?.queue ?? "";
    this.horizonMs = d?.horizonMs ?? 0;
    this.requestedAt = d?.requestedAt;
    this.latestAllowed = d?.latestAllowed;
  }
}

/** No such job, dead-letter record, queue or schedule. `field` names the
 * request field that named it (e.g. "name"; empty when the server named
 * none). */
export class NotFoundError extends SeppError {
  override name = "NotFoundError";
  readonly field: string;
  constructor(op: string, code: Code, message: string, details: ErrorDetail[] = []) {
    super(op, code, message, details);
    this.field = fieldViolationOf(details).field;
  }
}

/** What the call would create exists already: a queue or a schedule of
 * that name, or (UniqueConflictError) a job holding the uniqueness key.
 * `field` names the request field that named it (empty when the server
 * named none). */
export class AlreadyExistsError extends SeppError {
  override name = "AlreadyExistsError";
  readonly field: string;
  constructor(op: string, code: Code, message: string, details: ErrorDetail[] = []) {
    super(op, code, message, details);
    this.field = fieldViolationOf(details).field;
  }
}

/** A unique enqueue with `unique.refuse` found its key held by another job
 * of the queue; nothing was added. `jobId` and `queue` name the holder. */
export class UniqueConflictError extends AlreadyExistsError {
  override name = "UniqueConflictError";
  /** The queue of the job that holds the key. */
  readonly queue: string;
  /** The id of the job that holds the key. */
  readonly jobId: string;
  readonly description: string;
  constructor(op: string, code: Code, message: string, details: ErrorDetail[]) {
    super(op, code, message, details);
    const d = uniqueHolder(details);
    this.queue = d?.owner ?? "";
    this.jobId = d?.resourceName ?? "";
    this.description = d?.description || message;
  }
}

function uniqueHolder(details: ErrorDetail[]): Extract<ErrorDetail, { type: "google.rpc.ResourceInfo" }> | undefined {
  for (const d of details) {
    if (d.type === "google.rpc.ResourceInfo" && "resourceType" in d && d.resourceType === "job") return d;
  }
  return undefined;
}

/** The delivery's lease is no longer the job's current one (it expired, or
 * the job was redelivered, acked or released). Nothing changed. */
export class LeaseLostError extends SeppError {
  override name = "LeaseLostError";
}

/** An operator cancelled the job while a worker held its lease: the lease
 * was revoked, not lost. It is a LeaseLostError too (the lease is gone all
 * the same); test for JobCancelledError first to tell the two apart. A
 * Worker aborts the handler's signal with it as the reason. A cancel that
 * deleted the job leaves no trace, and its lease reads as lost. */
export class JobCancelledError extends LeaseLostError {
  override name = "JobCancelledError";
}

/** The job is not in a state the operation accepts. */
export class WrongStateError extends SeppError {
  override name = "WrongStateError";
}

/** A server limit refused the call; nothing was added. */
export class ResourceExhaustedError extends SeppError {
  override name = "ResourceExhaustedError";
}

/** The queue is at its max length. */
export class QueueFullError extends ResourceExhaustedError {
  override name = "QueueFullError";
}

/** No leader could be reached within the retry budget. */
export class UnavailableError extends SeppError {
  override name = "UnavailableError";
}

/** The node does not lead. The client follows it by itself; callers see it
 * only when the retry budget ran out. */
export class NotLeaderError extends UnavailableError {
  override name = "NotLeaderError";
  readonly leaderId: string;
  /** The leader's API address (host:port), empty when none is known. */
  readonly leaderAddr: string;
  constructor(op: string, code: Code, message: string, details: ErrorDetail[]) {
    super(op, code, message, details);
    const d = details.find((x) => x.type === "sepp.v1.NotLeader") as
      | Extract<ErrorDetail, { type: "sepp.v1.NotLeader" }>
      | undefined;
    this.leaderId = d?.leaderId ?? "";
    this.leaderAddr = d?.leaderGrpcAddr ?? "";
  }
}

/** The call may or may not have taken effect, and the client could not
 * settle it within its retry budget (or, for a drain, must not retry).
 * Never treat it as success or as a clean failure. `cause` is the last
 * failure. */
export class UnknownOutcomeError extends SeppError {
  override name = "UnknownOutcomeError";
}

export class PermissionDeniedError extends SeppError {
  override name = "PermissionDeniedError";
}

export class UnauthenticatedError extends SeppError {
  override name = "UnauthenticatedError";
}

/** The client (or producer, or worker) was closed. */
export class ClosedError extends SeppError {
  override name = "ClosedError";
  constructor(op: string) {
    super(op, "canceled", "client closed");
  }
}

/** The caller's AbortSignal ended the call (or its deadline passed). */
export class CanceledError extends SeppError {
  override name = "CanceledError";
}

/** The server failed in a way it did not classify. */
export class InternalError extends SeppError {
  override name = "InternalError";
}

const leaseOps = new Set(["ack", "ack batch", "nack", "release", "extend lease"]);

function isQueueFull(message: string, details: ErrorDetail[]): boolean {
  for (const d of details) {
    if (d.type === "sepp.v1.FieldViolation" && "field" in d && (d.field === "queue" || d.limit.includes("max_length"))) return true;
  }
  const m = message.toLowerCase();
  return m.includes("queue full") || m.includes("max_length") || m.includes("max_queue_length");
}

function preconditionIs(details: ErrorDetail[], type: string): boolean {
  for (const d of details) {
    if (d.type === "google.rpc.PreconditionFailure" && "violations" in d) {
      if (d.violations.some((v) => v.type === type)) return true;
    }
  }
  return false;
}

function preconditionIsLease(details: ErrorDetail[]): boolean {
  for (const d of details) {
    if (d.type === "google.rpc.PreconditionFailure" && "violations" in d) {
      if (d.violations.some((v) => v.type.toLowerCase().includes("lease"))) return true;
    }
  }
  return false;
}

/** Builds the typed error for a server status, as the Go client classifies it. */
export function errorFor(op: string, code: Code, message: string, details: ErrorDetail[]): SeppError {
  switch (code) {
    case "invalid_argument":
    case "out_of_range":
      if (details.some((d) => d.type === "sepp.v1.ScheduledTooFar")) return new ScheduledTooFarError(op, code, message, details);
      return new InvalidArgumentError(op, code, message, details);
    case "not_found":
      return leaseOps.has(op) ? new LeaseLostError(op, code, message, details) : new NotFoundError(op, code, message, details);
    case "failed_precondition":
      if (preconditionIs(details, "LEASE_CANCELLED")) return new JobCancelledError(op, code, message, details);
      // The cluster (VERSION) or the queue (QUEUE) refused a feature of the
      // request, an ack's result: the lease still holds.
      if (preconditionIs(details, "VERSION") || preconditionIs(details, "QUEUE")) return new WrongStateError(op, code, message, details);
      return leaseOps.has(op) || preconditionIsLease(details)
        ? new LeaseLostError(op, code, message, details)
        : new WrongStateError(op, code, message, details);
    case "already_exists":
      return uniqueHolder(details)
        ? new UniqueConflictError(op, code, message, details)
        : new AlreadyExistsError(op, code, message, details);
    case "resource_exhausted":
      return isQueueFull(message, details)
        ? new QueueFullError(op, code, message, details)
        : new ResourceExhaustedError(op, code, message, details);
    case "unavailable":
      if (details.some((d) => d.type === "sepp.v1.NotLeader")) return new NotLeaderError(op, code, message, details);
      return new UnavailableError(op, code, message, details);
    case "aborted":
      return new UnknownOutcomeError(op, code, message, details);
    case "permission_denied":
      return new PermissionDeniedError(op, code, message, details);
    case "unauthenticated":
      return new UnauthenticatedError(op, code, message, details);
    case "canceled":
    case "deadline_exceeded":
      return new CanceledError(op, code, message, details);
    default:
      return new InternalError(op, code, message, details);
  }
}
