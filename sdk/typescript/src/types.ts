import { arr, base64ToBytes, durationFrom, JSONObject, message, num, obj, str, timeFrom, u64 } from "./wire.js";
import type { DeadLetterRecordJSON, JobContextJSON } from "./gen/sepp/v1/types_json.js";
import type { GetServerInfoResponseJSON, WaitJobResponseJSON } from "./gen/sepp/v1/queue_service_json.js";
import type { JobTemplateJSON, ScheduleCatchUpJSON, ScheduleJSON, ScheduleOverlapJSON } from "./gen/sepp/v1/admin_service_json.js";
import { deadLetterCauseFromJSON, jobFromJSON, jobStateFromJSON } from "./gen/job.js";
import type { DeadLetterCause, Job, JobParent, JobState } from "./gen/job.js";
import type { EnqueueRequest } from "./gen/enqueue.js";

// The read side of a job (Job, JobAttempt, JobOrigin, JobParent, Progress,
// TraceContext, the JobState, DeadLetterCause and ParentFailurePolicy
// unions) and its decoders are generated from sepp.v1.Job by
// tools/protoc-gen-sepp-sdk (src/gen/job.ts, make generate): a field added
// to the proto reaches them with no edit here.
export type {
  DeadLetterCause,
  Job,
  JobAttempt,
  JobOrigin,
  JobParent,
  JobState,
  ParentFailurePolicy,
  Progress,
  TraceContext,
} from "./gen/job.js";
export { deadLetterCauseFromJSON, jobFromJSON, jobStateFromJSON, parentFailurePolicyFromJSON } from "./gen/job.js";

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

// The write side of a job (EnqueueRequest, UniqueOptions) and its
// conversion to the wire are generated from sepp.v1.EnqueueRequest by
// tools/protoc-gen-sepp-sdk (src/gen/enqueue.ts, make generate): a field
// added to the proto reaches them with no edit here. The client keeps
// what is not a plain field: the idempotency key it generates, a payload
// given as text, trace-context injection and validation.
export type { EnqueueRequest, UniqueOptions } from "./gen/enqueue.js";
/** @internal The wire form of a policy. */
export { parentFailurePolicyToJSON } from "./gen/enqueue.js";

export interface EnqueueResult {
  jobId: JobId;
  /** "ready", "scheduled", or "blocked" for a job enqueued after others. */
  state: JobState;
  /** The idempotency key matched an earlier enqueue, or another job holds
   * the uniqueness key: no new job was added and jobId is that job (its
   * state is "unspecified" once it was acked). A call retried after an
   * attempt that may have applied never reports it, as in the Go client:
   * the job the server found is taken for the call's own. */
  duplicate: boolean;
  /** The key the job was enqueued with (the caller's or a generated one). */
  idempotencyKey: string;
}





/** A parent (JobParent, as given) with its result, as client.parentResults reads it. */
export interface ParentResult extends JobParent {
  /** A completed parent's result (empty when it gave none, or when not
   * kept), whether the answer that brought the parent carried it or
   * parentResults read it. */
  result: Uint8Array;
  /** The server still holds the completed parent, so result is its result;
   * false for a parent that did not complete, or whose queue keeps no
   * completed jobs (completedRetentionMs) or kept it past its retention. */
  kept: boolean;
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

// ---- periodic schedules ----

/** What a tick does while the schedule's previous job is still waiting or
 * reserved: "skip" (the default) fires no job, "allow" fires one anyway. */
export type ScheduleOverlap = "skip" | "allow";

/** What the ticks missed while no leader could fire them make once one is
 * back: "once" (the default) fires one job for all of them, "skip" none. */
export type ScheduleCatchUp = "once" | "skip";

/**
 * The job each tick of a schedule enqueues. Every fired job also carries
 * the custom fields sepp_schedule (the schedule's name) and
 * sepp_schedule_tick (the tick in unix nanoseconds).
 */
export interface JobTemplate {
  queue: string;
  jobType: string;
  /** Bytes, or text sent as its UTF-8 bytes. */
  payload?: Uint8Array | string;
  /** 0..9; absent takes the queue's default_priority. */
  priority?: Priority | number;
  custom?: Record<string, string>;
  /** 0 or absent takes the queue's default_max_attempts. */
  maxAttempts?: number;
}

/** What defines a schedule. Set exactly one of cron and intervalMs. */
export interface ScheduleDefinition {
  /** 1..200 bytes; the schedule's identity. */
  name: string;
  /** A cron expression (five fields, six with leading seconds, or a
   * descriptor such as "@hourly"), read in timeZone. */
  cron?: string;
  /** A fixed interval in milliseconds, at least 1000: ticks at the
   * multiples of it since the unix epoch. */
  intervalMs?: number;
  /** An IANA zone name ("Europe/Berlin"); absent or empty is UTC. */
  timeZone?: string;
  template: JobTemplate;
  overlap?: ScheduleOverlap;
  catchUp?: ScheduleCatchUp;
  /** createSchedule only: create it paused. */
  paused?: boolean;
}

/** A schedule as the server holds it. It is a ScheduleDefinition too: edit
 * one and hand it to updateSchedule. */
export interface Schedule {
  name: string;
  /** Empty for an interval schedule. */
  cron: string;
  /** 0 for a cron schedule. */
  intervalMs: number;
  /** Empty is UTC. */
  timeZone: string;
  template: {
    queue: string;
    jobType: string;
    payload: Uint8Array;
    /** Absent: the queue's default_priority. */
    priority?: number;
    custom: Record<string, string>;
    maxAttempts: number;
  };
  overlap: ScheduleOverlap;
  catchUp: ScheduleCatchUp;
  paused: boolean;
  /** The next ticks, soonest first; empty while paused. */
  nextFireTimes: Date[];
  /** The latest tick fired; absent before the first. */
  lastFireTime?: Date;
  /** The job the latest tick enqueued; "0" when it enqueued none. */
  lastJobId: JobId;
  /** Ticks that enqueued a job. */
  fired: number;
  /** Ticks that did not (overlap, missed, or the enqueue refused). */
  skipped: number;
  createdAt?: Date;
  updatedAt?: Date;
}

function scheduleOverlap(v: ScheduleOverlapJSON | number | undefined): ScheduleOverlap {
  return v === "SCHEDULE_OVERLAP_ALLOW" || v === 2 ? "allow" : "skip";
}

function scheduleCatchUp(v: ScheduleCatchUpJSON | number | undefined): ScheduleCatchUp {
  return v === "SCHEDULE_CATCH_UP_SKIP" || v === 2 ? "skip" : "once";
}

export function scheduleFromJSON(v: unknown): Schedule {
  const m = message<ScheduleJSON>(v);
  const t = message<JobTemplateJSON>(m.template);
  const custom: Record<string, string> = {};
  for (const [k, x] of Object.entries(obj(t.custom))) custom[k] = str(x);
  const template: Schedule["template"] = {
    queue: str(t.queue),
    jobType: str(t.jobType),
    payload: base64ToBytes(str(t.payload)),
    custom,
    maxAttempts: num(t.maxAttempts),
  };
  if (t.priority !== undefined && t.priority !== null) template.priority = num(t.priority);
  const s: Schedule = {
    name: str(m.name),
    cron: str(m.cron),
    intervalMs: durationFrom(m.interval),
    timeZone: str(m.timeZone),
    template,
    overlap: scheduleOverlap(m.overlap),
    catchUp: scheduleCatchUp(m.catchUp),
    paused: m.paused === true,
    nextFireTimes: arr(m.nextFireTimes)
      .map(timeFrom)
      .filter((d): d is Date => d !== undefined),
    lastJobId: u64(m.lastJobId),
    fired: num(m.fired),
    skipped: num(m.skipped),
  };
  const last = timeFrom(m.lastFireTime);
  if (last) s.lastFireTime = last;
  const created = timeFrom(m.createdAt);
  if (created) s.createdAt = created;
  const updated = timeFrom(m.updatedAt);
  if (updated) s.updatedAt = updated;
  return s;
}

// ---- from the JSON mapping ----


export function jobContextFromJSON(v: unknown): JobContext {
  const m = message<JobContextJSON>(v);
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

export function jobContextToJSON(c: JobContext): JobContextJSON {
  const m: JobContextJSON = {
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

/** What wait answers: the job and, once terminal, how it ended. */
export interface JobOutcome {
  job: Job;
  /** True once the job completed or died. */
  terminal: boolean;
  /** "completed" or "dead" when terminal, the current state otherwise. */
  state: JobState;
  /** The worker's result of a completed job (empty when none). */
  result: Uint8Array;
  /** Why a dead job died; "unspecified" otherwise. */
  cause: DeadLetterCause;
  /** When the job completed or died. */
  finishedAt?: Date;
}

export function jobOutcomeFromJSON(v: unknown): JobOutcome {
  const m = message<WaitJobResponseJSON>(v);
  const out: JobOutcome = {
    job: jobFromJSON(m.job),
    terminal: m.terminal === true,
    state: jobStateFromJSON(m.state),
    result: base64ToBytes(str(m.result)),
    cause: deadLetterCauseFromJSON(m.cause),
  };
  const at = timeFrom(m.finishedAt);
  if (at) out.finishedAt = at;
  return out;
}

export function deadLetterFromJSON(v: unknown): DeadLetterRecord {
  const m = message<DeadLetterRecordJSON>(v);
  return new DeadLetterRecord(
    jobFromJSON(m.job),
    deadLetterCauseFromJSON(m.cause),
    timeFrom(m.failedAt),
    num(m.finalAttempt),
    str(m.lastReason),
  );
}

export function serverInfoFromJSON(v: unknown): ServerInfo {
  const m = message<GetServerInfoResponseJSON>(v);
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
    raw: obj(v),
  };
}

