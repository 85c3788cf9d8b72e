import { arr, base64ToBytes, JSONObject, num, obj, str, timeFrom, u64 } from "./wire.js";

/**
 * Job priority 0 (lowest) to 9 (highest); the server hands out higher
 * priorities first. MIN and MAX are P0 and P9.
 */
export const Priority = {
  P0: 0,
  P1: 1,
  P2: 2,
  P3: 3,
  P4: 4,
  P5: 5,
  P6: 6,
  P7: 7,
  P8: 8,
  P9: 9,
  MIN: 0,
  MAX: 9,
} as const;
export type Priority = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;

/**
 * Ids (job ids, lease tokens) are uint64 on the wire and strings here: the
 * JSON mapping sends 64-bit integers as strings because a JavaScript number
 * holds only 53 bits exactly. A string keeps every bit, survives
 * JSON.stringify and works as a Map key; `BigInt(id)` gives arithmetic when
 * it is wanted.
 */
export type JobId = string;

export type JobState = "unspecified" | "scheduled" | "ready" | "reserved" | "dead";
export type DeadLetterCause = "unspecified" | "attempts_exhausted" | "rejected" | "lease_expired" | "admin" | "cancelled" | "expired";

function jobState(v: unknown): JobState {
  switch (v) {
    case "JOB_STATE_SCHEDULED":
    case 1:
      return "scheduled";
    case "JOB_STATE_READY":
    case 2:
      return "ready";
    case "JOB_STATE_RESERVED":
    case 3:
      return "reserved";
    case "JOB_STATE_DEAD":
    case 4:
      return "dead";
  }
  return "unspecified";
}

function deadLetterCause(v: unknown): DeadLetterCause {
  switch (v) {
    case "DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED":
    case 1:
      return "attempts_exhausted";
    case "DEAD_LETTER_CAUSE_REJECTED":
    case 2:
      return "rejected";
    case "DEAD_LETTER_CAUSE_LEASE_EXPIRED":
    case 3:
      return "lease_expired";
    case "DEAD_LETTER_CAUSE_ADMIN":
    case 4:
      return "admin";
    case "DEAD_LETTER_CAUSE_CANCELLED":
    case 5:
      return "cancelled";
    case "DEAD_LETTER_CAUSE_EXPIRED":
    case 6:
      return "expired";
  }
  return "unspecified";
}

/** What to enqueue. Only queue and jobType are required. */
export interface EnqueueRequest {
  queue: string;
  jobType: string;
  /** Bytes, or text sent as its UTF-8 bytes. */
  payload?: Uint8Array | string;
  /** 0..9 (see Priority); absent takes the queue's default_priority. */
  priority?: Priority | number;
  /** The earliest time the job may run; absent: Ready now. */
  scheduledAt?: Date;
  /** 0 or absent takes the queue's default_max_attempts. */
  maxAttempts?: number;
  custom?: Record<string, string>;
  /** Absent: the client generates one per call, reused on its retries. */
  idempotencyKey?: string;
}

export interface EnqueueResult {
  jobId: JobId;
  /** "ready" or "scheduled". */
  state: JobState;
  /** The key matched an earlier enqueue: no new job was added. */
  duplicate: boolean;
  /** The key the job was enqueued with (the caller's or a generated one). */
  idempotencyKey: string;
}

export interface JobAttempt {
  attempt: number;
  workerId: string;
  endedAt?: Date;
  /** "nack", "lease_expired" or "released". */
  outcome: string;
  reason: string;
}

export interface Job {
  id: JobId;
  queue: string;
  jobType: string;
  payload: Uint8Array;
  priority: number;
  state: JobState;
  enqueuedAt?: Date;
  scheduledAt?: Date;
  nextAttemptAt?: Date;
  attempt: number;
  maxAttempts: number;
  custom: Record<string, string>;
  workerId: string;
  leaseDeadline?: Date;
  lastReason: string;
  history: JobAttempt[];
}

/**
 * A delivery's handle: pass it back to ack, nack, release and extendLease.
 * attempt and maxAttempts tell a handler whether this is its last try.
 */
export interface JobContext {
  jobId: JobId;
  leaseToken: string;
  /** 1 on the first delivery. */
  attempt: number;
  maxAttempts: number;
  /** By the server's clock. */
  leaseDeadline?: Date;
  queue: string;
  workerId: string;
}

/** One reserved job. */
export interface Delivery {
  ctx: JobContext;
  job: Job;
}

/** What nack does next: the queue's retry policy, a retry after a delay, or
 * straight to the dead-letter store. */
export class RetryDirective {
  private constructor(
    readonly kind: "default" | "after" | "dead_letter",
    /** With "after": the delay in milliseconds. */
    readonly delayMs: number = 0,
  ) {}
  /** Retry as the queue's retry policy says (immediate unless it sets a delay). */
  static default(): RetryDirective {
    return new RetryDirective("default");
  }
  /** Retry no sooner than delayMs from now (capped at the schedule horizon). */
  static after(delayMs: number): RetryDirective {
    return new RetryDirective("after", delayMs);
  }
  /** Skip any remaining attempts: dead-letter the job now. */
  static deadLetter(): RetryDirective {
    return new RetryDirective("dead_letter");
  }
  toString(): string {
    return this.kind === "after" ? `after(${this.delayMs}ms)` : this.kind;
  }
}

/** A dead-lettered job: a snapshot at failure time, payload inline. */
export class DeadLetterRecord {
  constructor(
    readonly job: Job,
    readonly cause: DeadLetterCause,
    readonly failedAt: Date | undefined,
    readonly finalAttempt: number,
    /** Empty when no worker nacked it. */
    readonly lastReason: string,
  ) {}
  get jobId(): JobId {
    return this.job.id;
  }
  /**
   * An enqueue of the same queue, type, payload, priority, max attempts and
   * custom fields: a replay is a fresh job (new id, attempt 1). Not the
   * schedule (it has passed) and not the idempotency key (a fresh one is
   * generated, or the replay would be taken for the original).
   */
  toEnqueueRequest(): EnqueueRequest {
    const j = this.job;
    const r: EnqueueRequest = { queue: j.queue, jobType: j.jobType, payload: j.payload, priority: j.priority };
    if (j.maxAttempts > 0) r.maxAttempts = j.maxAttempts;
    if (Object.keys(j.custom).length > 0) r.custom = { ...j.custom };
    return r;
  }
}

/** GetServerInfo: the node, its leader, and the limits a client should know. */
export interface ServerInfo {
  version: string;
  nodeId: string;
  leaderId: string;
  leaderAddr: string;
  stale: boolean;
  deadLetterRetentionEnabled: boolean;
  deadLetterRetentionMs: number;
  maxReserveBatch: number;
  maxScheduleHorizonMs: number;
  raw: JSONObject;
}

// ---- from the JSON mapping ----

export function jobFromJSON(v: unknown): Job {
  const m = obj(v);
  const custom: Record<string, string> = {};
  for (const [k, x] of Object.entries(obj(m.custom))) custom[k] = str(x);
  return {
    id: u64(m.id),
    queue: str(m.queue),
    jobType: str(m.jobType),
    payload: base64ToBytes(str(m.payload)),
    priority: num(m.priority),
    state: jobState(m.state),
    enqueuedAt: timeFrom(m.enqueuedAt),
    scheduledAt: timeFrom(m.scheduledAt),
    nextAttemptAt: timeFrom(m.nextAttemptAt),
    attempt: num(m.attempt),
    maxAttempts: num(m.maxAttempts),
    custom,
    workerId: str(m.workerId),
    leaseDeadline: timeFrom(m.leaseDeadline),
    lastReason: str(m.lastReason),
    history: arr(m.history).map((h) => {
      const a = obj(h);
      return {
        attempt: num(a.attempt),
        workerId: str(a.workerId),
        endedAt: timeFrom(a.endedAt),
        outcome: str(a.outcome),
        reason: str(a.reason),
      };
    }),
  };
}

export function jobContextFromJSON(v: unknown): JobContext {
  const m = obj(v);
  return {
    jobId: u64(m.jobId),
    leaseToken: u64(m.leaseToken),
    attempt: num(m.attempt),
    maxAttempts: num(m.maxAttempts),
    leaseDeadline: timeFrom(m.leaseDeadline),
    queue: str(m.queue),
    workerId: str(m.workerId),
  };
}

export function jobContextToJSON(c: JobContext): JSONObject {
  const m: JSONObject = {
    jobId: c.jobId,
    leaseToken: c.leaseToken,
    attempt: c.attempt,
    maxAttempts: c.maxAttempts,
    queue: c.queue,
    workerId: c.workerId,
  };
  if (c.leaseDeadline) m.leaseDeadline = c.leaseDeadline.toISOString();
  return m;
}

export function deadLetterFromJSON(v: unknown): DeadLetterRecord {
  const m = obj(v);
  return new DeadLetterRecord(
    jobFromJSON(m.job),
    deadLetterCause(m.cause),
    timeFrom(m.failedAt),
    num(m.finalAttempt),
    str(m.lastReason),
  );
}

export function serverInfoFromJSON(v: unknown): ServerInfo {
  const m = obj(v);
  return {
    version: str(m.version),
    nodeId: str(m.nodeId),
    leaderId: str(m.leaderId),
    leaderAddr: str(m.leaderGrpcAddr),
    stale: m.stale === true,
    deadLetterRetentionEnabled: m.deadLetterRetentionEnabled === true,
    deadLetterRetentionMs: num(m.deadLetterRetentionMs),
    maxReserveBatch: num(m.maxReserveBatch),
    maxScheduleHorizonMs: num(m.maxScheduleHorizonMs),
    raw: m,
  };
}

export { jobState as jobStateFromJSON };
