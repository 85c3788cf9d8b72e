import { arr, base64ToBytes, durationFrom, JSONObject, message, num, obj, str, timeFrom, u64 } from "./wire.js";
import type {
  DeadLetterCauseJSON,
  DeadLetterRecordJSON,
  JobAttemptJSON,
  JobContextJSON,
  JobJSON,
  JobOriginJSON,
  JobParentJSON,
  JobStateJSON,
  ParentFailurePolicyJSON,
} from "./gen/sepp/v1/types_json.js";
import type { GetServerInfoResponseJSON, WaitJobResponseJSON } from "./gen/sepp/v1/queue_service_json.js";
import type { JobTemplateJSON, ScheduleCatchUpJSON, ScheduleJSON, ScheduleOverlapJSON } from "./gen/sepp/v1/admin_service_json.js";

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

/** A job's state. "blocked": waiting for the jobs it was enqueued after
 * (EnqueueRequest.after) to end. "unspecified": no state, as of a parent
 * that was deleted or purged (JobParent.state). */
export type JobState = "unspecified" | "scheduled" | "ready" | "reserved" | "dead" | "completed" | "blocked";
export type DeadLetterCause = "unspecified" | "attempts_exhausted" | "rejected" | "lease_expired" | "admin" | "cancelled" | "expired";

// The enum decoders switch on the generated unions, so a value renamed in
// the proto fails the build here; a number is what a lenient peer may send.
function jobState(v: JobStateJSON | number | undefined): JobState {
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
    case "JOB_STATE_COMPLETED":
    case 5:
      return "completed";
    case "JOB_STATE_BLOCKED":
    case 6:
      return "blocked";
  }
  return "unspecified";
}

/**
 * What a job enqueued after others (EnqueueRequest.after) does when one of
 * them ends other than completed (dead-lettered, cancelled, expired,
 * deleted, purged): "cancel" (the default) dead-letters it at once with
 * the cause "cancelled" and a lastReason naming the parent, and its own
 * dependents follow their policies; "run" runs it once every parent has
 * ended, whatever the outcomes: a batch's callback, which reads them in
 * Job.parents.
 */
export type ParentFailurePolicy = "cancel" | "run";

// Unspecified is the server's default, cancel.
function parentFailurePolicy(v: ParentFailurePolicyJSON | number | undefined): ParentFailurePolicy {
  return v === "PARENT_FAILURE_POLICY_RUN" || v === 2 ? "run" : "cancel";
}

/** @internal The wire form of a policy. */
export function parentFailurePolicyToJSON(p: ParentFailurePolicy): ParentFailurePolicyJSON {
  return p === "run" ? "PARENT_FAILURE_POLICY_RUN" : "PARENT_FAILURE_POLICY_CANCEL";
}

function deadLetterCause(v: DeadLetterCauseJSON | number | undefined): DeadLetterCause {
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
  /** Makes the job unique in its queue: while another job holds the same
   * uniqueness key, the enqueue returns that job (duplicate: true) or, with
   * refuse, rejects with UniqueConflictError naming it. */
  unique?: UniqueOptions;
  /** A deadline by which the job must be reserved, else it is
   * dead-lettered with the cause "expired". Must lie after the server's
   * now and after scheduledAt. */
  expiresAt?: Date;
  /** The same deadline counted from the enqueue on the server's clock, in
   * whole milliseconds (at least 1; 0 or absent: none). With expiresAt, or
   * the queue's max_wait_ms, the earliest deadline applies. */
  ttlMs?: number;
  /** The job's W3C trace context; absent, the client's traceInjector (if
   * any) supplies the caller's. */
  traceContext?: TraceContext;
  /** The requests of the same call this job waits for, by index: earlier
   * items of the same enqueueBatch, or of the same ackWithFollowUps (or a
   * handler's Completion.followUps). The job is "blocked" until each has
   * ended, then Ready (or Scheduled until scheduledAt) if each completed,
   * else as onParentFailure says. A batch with such a job is applied whole
   * or refused whole. Not for enqueue or a Producer, which have no other
   * requests to name. */
  after?: number[];
  /** With after: what the job does when a parent ends other than
   * completed; absent is "cancel". "run" without after is refused. */
  onParentFailure?: ParentFailurePolicy;
}

/**
 * A W3C trace context (https://www.w3.org/TR/trace-context/), carried by a
 * job in a field of its own: the server keeps it with the job and returns
 * it on every delivery. traceparent is at most 128 bytes in the W3C format,
 * tracestate at most 512; the server rejects an invalid one with
 * InvalidArgumentError naming the field. Its keys are the header names a
 * tracing library's propagator reads and writes.
 */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/**
 * What makes a job unique in its queue and for how long. The key is held
 * while the job waits, is scheduled or is reserved.
 */
export interface UniqueOptions {
  /** The uniqueness key (at most 256 bytes); absent or empty derives one
   * from the job type, the payload and the custom fields named in fields. */
  key?: string;
  /** Custom fields the derived key includes; must be empty when key is set. */
  fields?: string[];
  /** Also hold the key while the job's dead-letter record is kept. */
  coverDead?: boolean;
  /** Also hold the key this long after the job was acked, in whole
   * milliseconds (at most the queue's max_schedule_horizon_ms). */
  completedForMs?: number;
  /** A conflict rejects with UniqueConflictError instead of returning the
   * holding job as a duplicate. */
  refuse?: boolean;
}

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

export interface JobAttempt {
  attempt: number;
  workerId: string;
  endedAt?: Date;
  /** "nack", "lease_expired", "released" or "cancelled" (an operator
   * cancelled the job). */
  outcome: string;
  reason: string;
  /** When the delivery was reserved; absent when the server did not
   * record it (an attempt from before the cluster ran a version that does). */
  startedAt?: Date;
  /** How long the attempt ran (endedAt - startedAt), in milliseconds;
   * absent with startedAt. */
  durationMs?: number;
  /** The delivery's lease token; "0" when not recorded. */
  leaseToken?: string;
  /** A nack's directive: "default", "after" or "dead_letter"; empty for
   * the other outcomes. */
  directive?: string;
}

/** Where a job forwarded to a queue's dead_letter_queue came from and why
 * it died there. */
export interface JobOrigin {
  /** The queue the job died on. */
  queue: string;
  /** Its id there. */
  jobId: JobId;
  cause: DeadLetterCause;
  failedAt?: Date;
  /** The reason of its last nack; empty when no worker nacked it. */
  lastReason: string;
  finalAttempt: number;
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
  /** The deadline by which the job must be reserved; absent: none. */
  expiresAt?: Date;
  /** When the current delivery started, while reserved; absent when the
   * server did not record it. */
  startedAt?: Date;
  /** Set on a job forwarded to a dead_letter_queue: where it came from and
   * why it died. Its custom fields are the producer's, as sent. */
  origin?: JobOrigin;
  /** The producer's W3C trace context; absent: none. */
  traceContext?: TraceContext;
  /** A completed job's result (empty when the worker gave none), kept for
   * its queue's completed_retention_ms. */
  result: Uint8Array;
  /** When a completed job was acked; absent otherwise. */
  completedAt?: Date;
  /** How long the completing delivery ran, in milliseconds; absent when
   * not recorded. */
  runTimeMs?: number;
  /** What the worker last reported (reportProgress), while the job is
   * reserved; absent when it reported none. */
  progress?: Progress;
  /** The jobs this one was enqueued after (EnqueueRequest.after), in the
   * order given, and how each ended; kept while the job is live, so a
   * Worker's handler sees them on its delivery (client.parentResults reads
   * their results). Empty when none. */
  parents: JobParent[];
  /** Its policy when a parent fails; absent for a job without parents. */
  onParentFailure?: ParentFailurePolicy;
  /** The jobs still waiting for this one to end ("blocked" jobs that name it
   * in their parents), in id order, the first 100 of them. A child leaves the
   * list when this job ends (it is then released, cancelled, or waits on its
   * other parents) or when it ends first, so a completed or dead job lists
   * none. Filled by getJob only; empty from listJobs and on a delivery. */
  waitingChildren: JobId[];
  /** How many jobs wait for this one, listed in waitingChildren or not (0 but
   * from getJob). */
  waitingChildrenTotal: number;
}

/** A job another was enqueued after, and how it ended. */
export interface JobParent {
  jobId: JobId;
  /** "completed" or "dead" once it ended that way; its current state while
   * it has not ended; "unspecified" once it was deleted or purged. */
  state: JobState;
  /** A dead parent's cause; "unspecified" otherwise. */
  cause: DeadLetterCause;
  /** It has ended: completed, dead-lettered, deleted or purged. */
  ended: boolean;
  /** A completed parent whose record the server keeps: result is its
   * result, unless resultOmitted. Set on getJob's job and a delivery's;
   * false elsewhere (listJobs). */
  resultKept: boolean;
  /** The completed parent's result (resultKept; empty when it gave none). */
  result: Uint8Array;
  /** Kept, but left out of this answer, which carries its parents' results
   * only up to a bound: parentResults reads it with getJob. */
  resultOmitted: boolean;
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
 * What a running job reported of itself: percent 0..100 and a short
 * message (at most 256 bytes of UTF-8). The server keeps it while the
 * delivery lasts and drops it when the delivery ends.
 */
export interface Progress {
  percent: number;
  message: string;
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

export function jobFromJSON(v: unknown): Job {
  const m = message<JobJSON>(v);
  const custom: Record<string, string> = {};
  for (const [k, x] of Object.entries(obj(m.custom))) custom[k] = str(x);
  const j: Job = {
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
    history: arr(m.history).map(jobAttemptFromJSON),
    expiresAt: timeFrom(m.expiresAt),
    startedAt: timeFrom(m.startedAt),
    result: base64ToBytes(str(m.result)),
    completedAt: timeFrom(m.completedAt),
    parents: arr(m.parents).map(jobParentFromJSON),
    waitingChildren: arr(m.waitingChildren).map(u64),
    waitingChildrenTotal: num(m.waitingChildrenTotal),
  };
  if (j.parents.length > 0) j.onParentFailure = parentFailurePolicy(m.onParentFailure);
  if (typeof m.runTime === "string") j.runTimeMs = durationFrom(m.runTime);
  if (m.progress) j.progress = { percent: num(m.progress.percent ?? 0), message: str(m.progress.message ?? "") };
  if (m.origin) j.origin = jobOriginFromJSON(m.origin);
  if (m.traceContext && m.traceContext.traceparent) {
    j.traceContext = { traceparent: m.traceContext.traceparent };
    if (m.traceContext.tracestate) j.traceContext.tracestate = m.traceContext.tracestate;
  }
  return j;
}

function jobParentFromJSON(v: unknown): JobParent {
  const p = message<JobParentJSON>(v);
  return {
    jobId: u64(p.jobId),
    state: jobState(p.state),
    cause: deadLetterCause(p.cause),
    ended: p.ended === true,
    resultKept: p.resultKept === true,
    result: base64ToBytes(str(p.result)),
    resultOmitted: p.resultOmitted === true,
  };
}

function jobAttemptFromJSON(v: unknown): JobAttempt {
  const a = message<JobAttemptJSON>(v);
  const r: JobAttempt = {
    attempt: num(a.attempt),
    workerId: str(a.workerId),
    endedAt: timeFrom(a.endedAt),
    outcome: str(a.outcome),
    reason: str(a.reason),
    startedAt: timeFrom(a.startedAt),
    leaseToken: u64(a.leaseToken),
    directive: str(a.directive),
  };
  if (typeof a.duration === "string") r.durationMs = durationFrom(a.duration);
  return r;
}

function jobOriginFromJSON(v: unknown): JobOrigin {
  const o = message<JobOriginJSON>(v);
  return {
    queue: str(o.queue),
    jobId: u64(o.jobId),
    cause: deadLetterCause(o.cause),
    failedAt: timeFrom(o.failedAt),
    lastReason: str(o.lastReason),
    finalAttempt: num(o.finalAttempt),
  };
}

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
    state: jobState(m.state),
    result: base64ToBytes(str(m.result)),
    cause: deadLetterCause(m.cause),
  };
  const at = timeFrom(m.finishedAt);
  if (at) out.finishedAt = at;
  return out;
}

export function deadLetterFromJSON(v: unknown): DeadLetterRecord {
  const m = message<DeadLetterRecordJSON>(v);
  return new DeadLetterRecord(
    jobFromJSON(m.job),
    deadLetterCause(m.cause),
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

export { jobState as jobStateFromJSON, deadLetterCause as deadLetterCauseFromJSON };
