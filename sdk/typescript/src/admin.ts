// The values of the operator calls (AdminService): queues as managed
// objects, per-job action results and redrive tasks, and their protojson
// forms. SeppClient's methods (client.ts) send and read them.

import type { SeppError } from "./errors.js";
import { DeadLetterCause, deadLetterCauseFromJSON, JobId } from "./types.js";
import { arr, durationFrom, message, num, str, timeFrom, u64 } from "./wire.js";
import type { DeadLetterCauseJSON } from "./gen/sepp/v1/types_json.js";
import type { EffectiveQueueSettings, QueueSettings } from "./gen/queue_settings.js";
import type {
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
  /** Jobs waiting for their parents (state "blocked", EnqueueRequest.after). */
  blocked: number;
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

// QueueSettings, EffectiveQueueSettings and their conversions to and from
// the wire are generated from the proto (make generate,
// tools/protoc-gen-sepp-sdk): a setting added there needs no edit here.
export type { QueueSettings, EffectiveQueueSettings } from "./gen/queue_settings.js";
export { queueLimitsFromJSON, queueSettingsFields, queueSettingsFromJSON, queueSettingsToJSON } from "./gen/queue_settings.js";

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
    blocked: num(q.blocked),
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
