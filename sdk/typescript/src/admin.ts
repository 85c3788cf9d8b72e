// The values of the operator calls (AdminService): queues as managed
// objects, per-job action results and redrive tasks, and their protojson
// forms. SeppClient's methods (client.ts) send and read them.

import type { SeppError } from "./errors.js";
import { DeadLetterCause, deadLetterCauseFromJSON, JobId } from "./types.js";
import { arr, durationFrom, message, num, str, timeFrom, u64 } from "./wire.js";
import type { DeadLetterCauseJSON } from "./gen/sepp/v1/types_json.js";
import type { QueueLimitsJSON } from "./gen/sepp/v1/queue_service_json.js";
import type {
  QueueSettingsJSON,
  QueueSummaryJSON,
  RedriveSelectionJSON,
  RedriveStateJSON,
  RedriveTaskJSON,
  StartRedriveRequestJSON,
} from "./gen/sepp/v1/admin_service_json.js";

/** One queue's counts (listQueues, getQueue). */
export interface QueueStats {
  name: string;
  paused: boolean;
  /** Named in the server config ([[queues]]). */
  configured: boolean;
  scheduled: number;
  ready: number;
  reserved: number;
  /** Retained dead-letter records. */
  dead: number;
  /** How long the oldest Ready job has waited; 0 when none. */
  oldestReadyAgeMs: number;
  enqueuedTotal: number;
  ackedTotal: number;
  /** Jobs ever dead-lettered, by cause. */
  deadLetteredTotal: Partial<Record<DeadLetterCause, number>>;
  /** Dead jobs dropped because retention is off. */
  droppedTotal: number;
  /** Waiting jobs an operator purged. */
  purgedTotal: number;
  /** The queue's tags (key/value labels); empty when it has none. */
  tags: Record<string, string>;
}

/**
 * A queue's own settings; a field left undefined inherits the server's
 * [limits] value (on update: stays as it is). Durations are whole
 * milliseconds. The reserve limits (maxReserved, rateLimit, ratePeriodMs,
 * rateBurst, concurrencyKey, maxPerKey) have no global value: undefined
 * and 0 (or "") both mean none. In QueueInfo.effective every field is set.
 */
export interface QueueSettings {
  defaultPriority?: number;
  defaultMaxAttempts?: number;
  retryDelayMs?: number;
  retryBackoff?: "none" | "exponential";
  retryDelayMaxMs?: number;
  maxScheduleHorizonMs?: number;
  /** 0: unbounded. */
  maxLength?: number;
  /** 0: no budget of its own. */
  maxMemoryBytes?: number;
  /** Receives a copy of every job that dies on the queue; it must exist.
   * On update, "" stops forwarding. */
  deadLetterQueue?: string;
  /** A job not reserved this long after it first became due dies with
   * cause "expired". */
  maxWaitMs?: number;
  /** The custom field whose values take turns within a priority level. */
  fairnessKey?: string;
  /** How long an acked job is kept with its result (1 ms..30 days): wait
   * and getJob answer for it and ackWithResult is accepted; drop it with
   * inherit "completed_retention_ms". In effective settings 0 is none.
   * Needs the server capability results. */
  completedRetentionMs?: number;
  maxReserved?: number;
  rateLimit?: number;
  ratePeriodMs?: number;
  rateBurst?: number;
  concurrencyKey?: string;
  maxPerKey?: number;
  /**
   * Key/value labels to find the queue by (listQueuesByTag); they change
   * nothing about how it runs. At most 50; a key is 1..128 bytes of
   * letters, digits, spaces and _ . : / = + - @, a value at most 256 bytes.
   * On update undefined leaves them and an object replaces the whole set
   * ({} drops them, as inherit "tags" does). Not in the effective
   * settings. Needs the server capability queue_tags.
   */
  tags?: Record<string, string>;
}

/** What a queue runs with: every setting set (tags have no global value,
 * so they are not among them). */
export type EffectiveQueueSettings = Required<Omit<QueueSettings, "tags">>;

/** One queue: its counts, its own settings and what it runs with
 * (effective: its settings over the global limits). */
export interface QueueInfo {
  stats: QueueStats;
  settings: QueueSettings;
  effective: EffectiveQueueSettings;
}

/** What updateQueue changes: the set fields of settings replace the
 * queue's own, inherit names settings to drop ("default_priority",
 * "retry_delay_ms", ...) so the global value applies again, paused pauses
 * (true) or resumes (false) it. */
export interface QueueUpdate {
  settings?: QueueSettings;
  inherit?: string[];
  paused?: boolean;
}

/** What deleteQueue or purgeQueue removed. */
export interface QueueRemoval {
  jobs: number;
  deadLetters: number;
}

/** What purgeQueue removes: the waiting (Ready and Scheduled) jobs, or the
 * retained dead letters. */
export type PurgeTarget = "waiting" | "dead_letters";

/** The outcome of an operator action on one job id: error is undefined on
 * success, else the error the action met for that job alone. */
export interface ActionResult {
  jobId: JobId;
  error?: SeppError;
}

export type RedriveState = "unspecified" | "running" | "paused" | "cancelled" | "done";

/** The dead letters a redrive moves; a field left undefined matches all. */
export interface RedriveSelection {
  queue?: string;
  cause?: DeadLetterCause;
  jobType?: string;
  /** A substring of the record's last reason. */
  reasonContains?: string;
  /** failedAt at or after. */
  failedAfter?: Date;
  /** failedAt before. */
  failedBefore?: Date;
}

/**
 * A redrive: the records selection matches go back to their queue with
 * their ids and attempts reset, or, with fresh, are replayed as new jobs
 * (to toQueue when named; it must exist), at rate jobs per second
 * (1..10000; 0 or undefined lets the server use 100).
 */
export interface RedriveOptions {
  selection?: RedriveSelection;
  toQueue?: string;
  fresh?: boolean;
  rate?: number;
}

/** A redrive task and, once ended, its audit record. */
export interface RedriveTask {
  id: string;
  selection: RedriveSelection;
  toQueue: string;
  fresh: boolean;
  rate: number;
  state: RedriveState;
  moved: number;
  /** Matching records still to move (0 once ended). */
  remaining: number;
  /** The highest record (job) id handled. */
  cursor: JobId;
  lastError: string;
  /** The token name that started it ("" when admin auth is off). */
  createdBy: string;
  createdAt?: Date;
  updatedAt?: Date;
  endedAt?: Date;
  endedBy: string;
}

// ---- to and from the JSON mapping ----

export function queueStatsFromJSON(v: unknown): QueueStats {
  const q = message<QueueSummaryJSON>(v);
  const byCause: Partial<Record<DeadLetterCause, number>> = {};
  for (const c of arr(q.deadLetteredTotal)) {
    const m = message<{ cause?: DeadLetterCauseJSON; count?: string }>(c);
    const cause = deadLetterCauseFromJSON(m.cause);
    byCause[cause] = (byCause[cause] ?? 0) + num(m.count);
  }
  return {
    name: str(q.name),
    paused: q.paused === true,
    configured: q.configured === true,
    scheduled: num(q.scheduled),
    ready: num(q.ready),
    reserved: num(q.reserved),
    dead: num(q.dead),
    oldestReadyAgeMs: durationFrom(q.oldestReadyAge),
    enqueuedTotal: num(q.enqueuedTotal),
    ackedTotal: num(q.ackedTotal),
    deadLetteredTotal: byCause,
    droppedTotal: num(q.droppedTotal),
    purgedTotal: num(q.purgedTotal),
    tags: tagsFromJSON(q.tags),
  };
}

function tagsFromJSON(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = str(x);
  }
  return out;
}

function whole(field: string, v: number | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${field} must be a whole number >= 0, got ${v}`);
  return String(v);
}

/**
 * The wire's QueueSettings (QueueSettingsJSON, generated from the proto by
 * make generate) and this SDK's, field by field. It does not compile when
 * the proto gains a field that QueueSettings lacks, or loses one: a new
 * queue setting cannot be left out of the SDK unnoticed. (The SDK's type
 * stays its own: numbers where the wire has int64 strings, "none" and
 * "exponential" where it has enum names, a tag record where it has a
 * wrapper.) queueSettingsToJSON and queueSettingsFromJSON must then map it.
 */
export const queueSettingsFields: {
  [K in keyof Required<QueueSettingsJSON>]: K extends keyof QueueSettings ? true : never;
} = {
  defaultPriority: true,
  defaultMaxAttempts: true,
  retryDelayMs: true,
  retryBackoff: true,
  retryDelayMaxMs: true,
  maxScheduleHorizonMs: true,
  maxLength: true,
  maxMemoryBytes: true,
  deadLetterQueue: true,
  maxWaitMs: true,
  fairnessKey: true,
  maxReserved: true,
  rateLimit: true,
  ratePeriodMs: true,
  rateBurst: true,
  concurrencyKey: true,
  maxPerKey: true,
  tags: true,
  completedRetentionMs: true,
};

export function queueSettingsToJSON(s: QueueSettings = {}): QueueSettingsJSON {
  const m: QueueSettingsJSON = {};
  if (s.defaultPriority !== undefined) m.defaultPriority = s.defaultPriority;
  if (s.defaultMaxAttempts !== undefined) m.defaultMaxAttempts = s.defaultMaxAttempts;
  if (s.retryBackoff !== undefined) {
    if (s.retryBackoff !== "none" && s.retryBackoff !== "exponential") {
      throw new RangeError(`retryBackoff must be "none" or "exponential", got ${String(s.retryBackoff)}`);
    }
    m.retryBackoff = s.retryBackoff === "exponential" ? "RETRY_BACKOFF_EXPONENTIAL" : "RETRY_BACKOFF_NONE";
  }
  if (s.deadLetterQueue !== undefined) m.deadLetterQueue = s.deadLetterQueue;
  if (s.fairnessKey !== undefined) m.fairnessKey = s.fairnessKey;
  if (s.concurrencyKey !== undefined) m.concurrencyKey = s.concurrencyKey;
  // Present (even {}) replaces the queue's tags; absent leaves them.
  if (s.tags !== undefined) m.tags = { tags: { ...s.tags } };
  const n: [keyof QueueSettingsJSON & keyof QueueSettings, number | undefined][] = [
    ["retryDelayMs", s.retryDelayMs],
    ["retryDelayMaxMs", s.retryDelayMaxMs],
    ["maxScheduleHorizonMs", s.maxScheduleHorizonMs],
    ["maxLength", s.maxLength],
    ["maxMemoryBytes", s.maxMemoryBytes],
    ["maxWaitMs", s.maxWaitMs],
    ["completedRetentionMs", s.completedRetentionMs],
    ["maxReserved", s.maxReserved],
    ["rateLimit", s.rateLimit],
    ["ratePeriodMs", s.ratePeriodMs],
    ["rateBurst", s.rateBurst],
    ["maxPerKey", s.maxPerKey],
  ];
  const out = m as Record<string, unknown>;
  for (const [k, v] of n) {
    const w = whole(k, v);
    if (w !== undefined) out[k] = w;
  }
  return m;
}

function backoff(v: unknown): "none" | "exponential" {
  return v === "RETRY_BACKOFF_EXPONENTIAL" || v === 2 ? "exponential" : "none";
}

export function queueSettingsFromJSON(v: unknown): QueueSettings {
  const m = message<QueueSettingsJSON>(v);
  const s: QueueSettings = {};
  const n = (x: unknown): number | undefined => (x === undefined || x === null ? undefined : num(x));
  const t = (x: unknown): string | undefined => (x === undefined || x === null ? undefined : str(x));
  const set = <K extends keyof QueueSettings>(k: K, x: QueueSettings[K] | undefined) => {
    if (x !== undefined) s[k] = x;
  };
  set("defaultPriority", n(m.defaultPriority));
  set("defaultMaxAttempts", n(m.defaultMaxAttempts));
  set("retryDelayMs", n(m.retryDelayMs));
  if (m.retryBackoff !== undefined && m.retryBackoff !== null) s.retryBackoff = backoff(m.retryBackoff);
  set("retryDelayMaxMs", n(m.retryDelayMaxMs));
  set("maxScheduleHorizonMs", n(m.maxScheduleHorizonMs));
  set("maxLength", n(m.maxLength));
  set("maxMemoryBytes", n(m.maxMemoryBytes));
  set("deadLetterQueue", t(m.deadLetterQueue));
  set("maxWaitMs", n(m.maxWaitMs));
  set("fairnessKey", t(m.fairnessKey));
  set("completedRetentionMs", n(m.completedRetentionMs));
  set("maxReserved", n(m.maxReserved));
  set("rateLimit", n(m.rateLimit));
  set("ratePeriodMs", n(m.ratePeriodMs));
  set("rateBurst", n(m.rateBurst));
  set("concurrencyKey", t(m.concurrencyKey));
  set("maxPerKey", n(m.maxPerKey));
  if (m.tags !== undefined && m.tags !== null) s.tags = tagsFromJSON(m.tags.tags);
  return s;
}

export function queueLimitsFromJSON(v: unknown): EffectiveQueueSettings {
  const l = message<QueueLimitsJSON>(v);
  return {
    defaultPriority: num(l.defaultPriority),
    defaultMaxAttempts: num(l.defaultMaxAttempts),
    retryDelayMs: num(l.retryDelayMs),
    retryBackoff: backoff(l.retryBackoff),
    retryDelayMaxMs: num(l.retryDelayMaxMs),
    maxScheduleHorizonMs: num(l.maxScheduleHorizonMs),
    maxLength: num(l.maxLength),
    maxMemoryBytes: num(l.maxMemoryBytes),
    deadLetterQueue: str(l.deadLetterQueue),
    maxWaitMs: num(l.maxWaitMs),
    fairnessKey: str(l.fairnessKey),
    completedRetentionMs: num(l.completedRetentionMs),
    maxReserved: num(l.maxReserved),
    rateLimit: num(l.rateLimit),
    ratePeriodMs: num(l.ratePeriodMs),
    rateBurst: num(l.rateBurst),
    concurrencyKey: str(l.concurrencyKey),
    maxPerKey: num(l.maxPerKey),
  };
}

function causeToJSON(c: DeadLetterCause): DeadLetterCauseJSON {
  return `DEAD_LETTER_CAUSE_${c.toUpperCase()}` as DeadLetterCauseJSON;
}

export function redriveToJSON(o: RedriveOptions): StartRedriveRequestJSON {
  const s = o.selection ?? {};
  const sel: RedriveSelectionJSON = {};
  if (s.queue) sel.queue = s.queue;
  if (s.cause && s.cause !== "unspecified") sel.cause = causeToJSON(s.cause);
  if (s.jobType) sel.jobType = s.jobType;
  if (s.reasonContains) sel.reasonContains = s.reasonContains;
  if (s.failedAfter) sel.failedAfter = s.failedAfter.toISOString();
  if (s.failedBefore) sel.failedBefore = s.failedBefore.toISOString();
  const m: StartRedriveRequestJSON = { selection: sel };
  if (o.toQueue) m.toQueue = o.toQueue;
  if (o.fresh) m.fresh = true;
  if (o.rate) m.rate = o.rate;
  return m;
}

function redriveState(v: RedriveStateJSON | number | undefined): RedriveState {
  switch (v) {
    case "REDRIVE_STATE_RUNNING":
    case 1:
      return "running";
    case "REDRIVE_STATE_PAUSED":
    case 2:
      return "paused";
    case "REDRIVE_STATE_CANCELLED":
    case 3:
      return "cancelled";
    case "REDRIVE_STATE_DONE":
    case 4:
      return "done";
  }
  return "unspecified";
}

export function redriveTaskFromJSON(v: unknown): RedriveTask {
  const m = message<RedriveTaskJSON>(v);
  const s = message<RedriveSelectionJSON>(m.selection);
  const selection: RedriveSelection = {};
  if (s.queue) selection.queue = s.queue;
  if (s.cause) selection.cause = deadLetterCauseFromJSON(s.cause);
  if (s.jobType) selection.jobType = s.jobType;
  if (s.reasonContains) selection.reasonContains = s.reasonContains;
  const after = timeFrom(s.failedAfter);
  if (after) selection.failedAfter = after;
  const before = timeFrom(s.failedBefore);
  if (before) selection.failedBefore = before;
  const t: RedriveTask = {
    id: u64(m.id),
    selection,
    toQueue: str(m.toQueue),
    fresh: m.fresh === true,
    rate: num(m.rate),
    state: redriveState(m.state),
    moved: num(m.moved),
    remaining: num(m.remaining),
    cursor: u64(m.cursor),
    lastError: str(m.lastError),
    createdBy: str(m.createdBy),
    endedBy: str(m.endedBy),
  };
  const created = timeFrom(m.createdAt);
  if (created) t.createdAt = created;
  const updated = timeFrom(m.updatedAt);
  if (updated) t.updatedAt = updated;
  const ended = timeFrom(m.endedAt);
  if (ended) t.endedAt = ended;
  return t;
}
