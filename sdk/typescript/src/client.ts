import {
  CanceledError,
  ClosedError,
  Code,
  codeFromNumber,
  errorFor,
  InternalError,
  InvalidArgumentError,
  LeaseLostError,
  NotFoundError,
  NotLeaderError,
  SeppError,
  UnavailableError,
  UnknownOutcomeError,
} from "./errors.js";
import {
  DeadLetterRecord,
  deadLetterFromJSON,
  Delivery,
  EnqueueRequest,
  TraceContext,
  EnqueueResult,
  jobContextFromJSON,
  jobContextToJSON,
  JobContext,
  jobFromJSON,
  JobOutcome,
  jobOutcomeFromJSON,
  jobStateFromJSON,
  RetryDirective,
  Schedule,
  ScheduleDefinition,
  scheduleFromJSON,
  ServerInfo,
  serverInfoFromJSON,
  Job,
  JobId,
  JobState,
  JobParent,
  ParentResult,
  Priority,
} from "./types.js";
import { enqueueRequestToJSON, traceContextToJSON } from "./gen/enqueue.js";
import {
  arr,
  base64ToBytes,
  bytesToBase64,
  decodeDetail,
  detailFromJSON,
  durationJSON,
  ErrorDetail,
  JSONObject,
  message,
  num,
  obj,
  payloadBytes,
  str,
  timeFrom,
  u64,
} from "./wire.js";
import { newKey, randomSource } from "./random.js";
import type { ItemErrorJSON, ReservedJobJSON } from "./gen/sepp/v1/types_json.js";
import type {
  AckBatchRequestJSON,
  AckBatchResponseJSON,
  AckBatchResultJSON,
  AckRequestJSON,
  AckResponseJSON,
  DrainDeadLettersRequestJSON,
  DrainDeadLettersResponseJSON,
  EnqueueBatchRequestJSON,
  EnqueueBatchResponseJSON,
  EnqueueBatchResultJSON,
  EnqueueRequestJSON,
  EnqueueResponseJSON,
  ExtendLeaseRequestJSON,
  ExtendLeaseResponseJSON,
  GetServerInfoRequestJSON,
  GetServerInfoResponseJSON,
  NackRequestJSON,
  NackResponseJSON,
  ReleaseRequestJSON,
  ReleaseResponseJSON,
  ReserveRequestJSON,
  ReserveResponseJSON,
  RetryDirectiveJSON,
  WaitJobRequestJSON,
  WaitJobResponseJSON,
} from "./gen/sepp/v1/queue_service_json.js";
import type {
  CreateScheduleRequestJSON,
  CreateScheduleResponseJSON,
  DeleteScheduleRequestJSON,
  DeleteScheduleResponseJSON,
  GetJobRequestJSON,
  GetJobResponseJSON,
  GetScheduleRequestJSON,
  GetScheduleResponseJSON,
  JobTemplateJSON,
  ListSchedulesRequestJSON,
  ListSchedulesResponseJSON,
  PauseScheduleRequestJSON,
  PauseScheduleResponseJSON,
  ResumeScheduleRequestJSON,
  ResumeScheduleResponseJSON,
  ScheduleJSON,
  UpdateScheduleRequestJSON,
  UpdateScheduleResponseJSON,
} from "./gen/sepp/v1/admin_service_json.js";
import type {
  CreateQueueRequestJSON,
  CreateQueueResponseJSON,
  DeleteQueueRequestJSON,
  DeleteQueueResponseJSON,
  GetDeadLetterRequestJSON,
  GetDeadLetterResponseJSON,
  GetQueueRequestJSON,
  GetQueueResponseJSON,
  GetRedriveRequestJSON,
  GetRedriveResponseJSON,
  ListDeadLettersRequestJSON,
  ListDeadLettersResponseJSON,
  ListJobsRequestJSON,
  ListJobsResponseJSON,
  ListQueuesRequestJSON,
  ListQueuesResponseJSON,
  ListRedrivesRequestJSON,
  ListRedrivesResponseJSON,
  PauseQueueRequestJSON,
  PauseQueueResponseJSON,
  PreviewRedriveRequestJSON,
  PreviewRedriveResponseJSON,
  PurgeQueueRequestJSON,
  PurgeQueueResponseJSON,
  RedriveTaskJSON,
  ResumeQueueRequestJSON,
  ResumeQueueResponseJSON,
  StartRedriveRequestJSON,
  StartRedriveResponseJSON,
  UpdateQueueRequestJSON,
  UpdateQueueResponseJSON,
} from "./gen/sepp/v1/admin_service_json.js";
import type { JobActionResultJSON } from "./gen/sepp/v1/types_json.js";
import type { StatusResponseJSON } from "./gen/sepp/v1/cluster_service_json.js";
import {
  ActionResult,
  PurgeTarget,
  QueueInfo,
  QueueRemoval,
  QueueSettings,
  EffectiveQueueSettings,
  QueueStats,
  QueueUpdate,
  RedriveOptions,
  RedriveTask,
  queueLimitsFromJSON,
  queueSettingsFromJSON,
  queueSettingsToJSON,
  queueStatsFromJSON,
  redriveTaskFromJSON,
  redriveToJSON,
} from "./admin.js";

/** Options of SeppClient.connect; every field is optional. */
export interface ClientOptions {
  /** An API token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Extra headers on every call. */
  headers?: Record<string, string>;
  /** How long one call keeps retrying through a failover (default 15 000 ms).
   * 0 disables retries: every call makes exactly one attempt. */
  retryTimeoutMs?: number;
  /** Bounds one attempt (default 10 000 ms); a long-poll reserve gets its
   * wait on top. */
  attemptTimeoutMs?: number;
  /** Backoff between retries: base and cap (default 5 and 100 ms), jittered. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** How long an attempt may go unanswered before the client asks the
   * other nodes who leads (default 300 ms; 0: never). When one names
   * another leader, the attempt is abandoned for it. */
  leaderProbeMs?: number;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Called for each job enqueued without a trace context of its own; what
   * it returns (the caller's current trace context, from a tracing library)
   * rides with the job. Absent: no tracing. See docs/tracing.md. */
  traceInjector?: () => TraceContext | undefined;
}

/** Per-call options. */
export interface CallOptions {
  /** Ends the call (and its retries) early. A call with an unknown outcome
   * that is aborted rejects with UnknownOutcomeError, else CanceledError. */
  signal?: AbortSignal;
}

/** A page of listJobs or listDeadLetters. */
export interface ListOptions extends CallOptions {
  /** Start after this job id (exclusive); undefined starts at the beginning. */
  afterJobId?: JobId;
  /** Page size; 0 or undefined means 100; the server clamps to 1000. */
  limit?: number;
  /** Let a follower answer from its own state. */
  stale?: boolean;
}

export interface ReserveOptions extends CallOptions {
  /** Names the worker in listings and attempt history. */
  workerId?: string;
  /** Jobs wanted (default 1); the server clamps to max_reserve_batch. */
  max?: number;
  /** Lease asked for, ms; absent takes the server's default_lease_ms. */
  leaseMs?: number;
  /** Long-poll: how long to wait for a job when none is ready, ms; absent
   * or 0 returns at once. The server caps it at max_reserve_wait_ms. */
  waitMs?: number;
  /** Makes a retried reserve return the first one's deliveries; absent:
   * generated per call and reused on its retries. */
  requestId?: string;
}

/** Options of getSchedule and listSchedules. */
export interface ScheduleReadOptions extends CallOptions {
  /** Next fire times to compute per schedule, 0..100; absent or 0 takes
   * the server's default (5 for getSchedule, 1 for listSchedules). */
  nextFireTimes?: number;
  /** Let the answering node reply from its own, possibly stale, state. */
  stale?: boolean;
}

/** One item's outcome of enqueueBatch. */
export type BatchResult = { ok: true; result: EnqueueResult } | { ok: false; error: SeppError };

export interface ProducerOptions {
  /** How long the first job of a batch waits for company (default 1 ms).
   * Jobs arriving while maxInFlight batches are out wait anyway, so under
   * load batches fill without added latency. */
  lingerMs?: number;
  /** Jobs per EnqueueBatch call (default 256; keep it at or below the
   * server's max_batch_size). */
  maxBatch?: number;
  /** Batches sent at once (default 4). */
  maxInFlight?: number;
}

const defaults = {
  retryTimeoutMs: 15_000,
  attemptTimeoutMs: 10_000,
  backoffBaseMs: 5,
  backoffMaxMs: 100,
  leaderProbeMs: 300,
};

/** The response header a follower sets on a call it forwarded to the leader. */
const leaderHeader = "sepp-leader-grpc-addr";

// The wait each WaitJob call of wait() asks for: the server's default,
// below its 60 s cap.
const WAIT_JOB_POLL_MS = 30_000;

/** How many getJob calls parentResults makes at once. */
const PARENT_READS = 8;

/** The server's bound on a progress message, in bytes of UTF-8 (GetServerInfo's limits.max_progress_message_bytes). */
export const MAX_PROGRESS_MESSAGE_BYTES = 256;

/**
 * Refuses what the server would refuse of a progress report, before a call
 * is spent on it: an InvalidArgumentError naming progress.percent or
 * progress.message.
 * @internal
 */
export function checkProgress(op: string, percent: number, message: string): void {
  const bad = (field: string, desc: string, limit: string) =>
    new InvalidArgumentError(op, "invalid_argument", `${field}: ${desc}`, [
      { type: "sepp.v1.FieldViolation", field, limit, description: desc },
    ]);
  if (!(Number.isInteger(percent) && percent >= 0 && percent <= 100)) {
    throw bad("progress.percent", `must be 0..100, got ${percent}`, "0..100");
  }
  const size = new TextEncoder().encode(message).length;
  if (size > MAX_PROGRESS_MESSAGE_BYTES) {
    throw bad("progress.message", `is ${size} bytes, above the limit of ${MAX_PROGRESS_MESSAGE_BYTES}`, String(MAX_PROGRESS_MESSAGE_BYTES));
  }
}

/** Why one attempt failed, and what that means for a retry. */
class AttemptFailure {
  constructor(
    readonly kind: "final" | "not_applied" | "maybe_applied",
    readonly err: SeppError,
    readonly leaderAddr = "",
  ) {}
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done);
  });
}

/** The connection-level error code Node's fetch puts under cause. */
function netCode(e: unknown): string {
  let c: unknown = e;
  for (let i = 0; i < 4 && c && typeof c === "object"; i++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === "string") return code;
    c = (c as { cause?: unknown }).cause;
  }
  return "";
}

// Connect's HTTP status → code mapping, for an answer without error JSON
// (a proxy's page, or grpc-go's 415 to an HTTP/2 non-gRPC client).
function codeForHTTP(status: number): Code {
  switch (status) {
    case 400:
      return "invalid_argument";
    case 401:
      return "unauthenticated";
    case 403:
      return "permission_denied";
    case 404:
      return "unimplemented";
    case 408:
      return "deadline_exceeded";
    case 409:
      return "aborted";
    case 412:
      return "failed_precondition";
    case 413:
      return "resource_exhausted";
    case 429:
    case 502:
    case 503:
    case 504:
      return "unavailable";
  }
  return "unknown";
}

function parseErrorJSON(op: string, status: number, text: string): SeppError {
  let m: JSONObject | undefined;
  try {
    m = obj(JSON.parse(text));
  } catch {
    m = undefined;
  }
  if (!m || typeof m.code !== "string") {
    return errorFor(op, codeForHTTP(status), `HTTP ${status}: ${text.slice(0, 200)}`, []);
  }
  const details: ErrorDetail[] = [];
  for (const d of arr(m.details)) {
    const dm = obj(d);
    try {
      details.push(decodeDetail(str(dm.type), base64ToBytes(str(dm.value))));
    } catch {
      // An undecodable detail is dropped; the code and message stand.
    }
  }
  return errorFor(op, m.code as Code, str(m.message), details);
}

/** An ItemError of a batch response (code number, details as JSON Any). */
function itemError(op: string, v: unknown): SeppError {
  const m = message<ItemErrorJSON>(v);
  const details = arr(m.details).map((d) => detailFromJSON(obj(d)));
  return errorFor(op, codeFromNumber(num(m.code)), str(m.message), details);
}

function validateEnqueue(r: EnqueueRequest, field: string): SeppError | undefined {
  const bad = (f: string, desc: string, limit = "") =>
    new InvalidArgumentError("enqueue", "invalid_argument", `${field}${f}: ${desc}`, [
      { type: "sepp.v1.FieldViolation", field: field + f, limit, description: desc },
    ]);
  if (!r || typeof r.queue !== "string" || r.queue === "") return bad("queue", "queue must not be empty");
  if (typeof r.jobType !== "string" || r.jobType === "") return bad("job_type", "job_type must not be empty");
  if (r.priority !== undefined && !(Number.isInteger(r.priority) && r.priority >= 0 && r.priority <= 9)) {
    return bad("priority", `must be 0..9, got ${r.priority}`);
  }
  if (r.maxAttempts !== undefined && !(Number.isInteger(r.maxAttempts) && r.maxAttempts >= 0)) {
    return bad("max_attempts", `must be a non-negative integer, got ${r.maxAttempts}`);
  }
  if (r.scheduledAt !== undefined && !validDate(r.scheduledAt)) {
    return bad("scheduled_at", "must be a valid Date");
  }
  if (r.expiresAt !== undefined && !validDate(r.expiresAt)) {
    return bad("expires_at", "must be a valid Date");
  }
  // As the Go client: a ttl, when set, is at least 1 ms (0 is none).
  if (r.ttlMs !== undefined && r.ttlMs !== 0 && !(Number.isFinite(r.ttlMs) && r.ttlMs >= 1)) {
    return bad("ttl_ms", `must be at least 1 ms (0 is none), got ${r.ttlMs}`, ">= 1");
  }
  const u = r.unique;
  if (u !== undefined) {
    if (typeof u !== "object" || u === null) return bad("unique", "must be an object of UniqueOptions");
    if (u.completedForMs !== undefined && !(Number.isFinite(u.completedForMs) && u.completedForMs >= 0)) {
      return bad("unique.completed_for_ms", `must not be negative, got ${u.completedForMs}`, ">= 0");
    }
    if (u.fields !== undefined && !(Array.isArray(u.fields) && u.fields.every((f) => typeof f === "string"))) {
      return bad("unique.fields", "must be an array of custom field names");
    }
  }
  // As the Go client: an index is a uint32 the server reads as an int32;
  // whether it names an earlier request the server checks.
  if (r.after !== undefined) {
    if (!Array.isArray(r.after)) return bad("after", "must be an array of earlier requests' indexes");
    for (const [k, a] of r.after.entries()) {
      if (!(Number.isInteger(a) && a >= 0 && a <= 0x7fffffff)) {
        return bad(`after[${k}]`, `must be an earlier request's index, got ${String(a)}`, "an earlier request's index");
      }
    }
  }
  const p = r.onParentFailure;
  if (p !== undefined && p !== "cancel" && p !== "run") {
    return bad("on_parent_failure", `must be "cancel" or "run", got ${String(p)}`, "cancel or run");
  }
  if (p === "run" && !hasAfter(r)) {
    return bad("on_parent_failure", "is set, but the job waits for nothing (after is empty)", "with after");
  }
  return undefined;
}

/** A lone request's after, refused as the server refuses it in Enqueue. */
function afterRefused(op: string): SeppError {
  const desc = "names requests of the same call: only an enqueueBatch's jobs or an ack's follow-ups can wait for each other";
  return new InvalidArgumentError(op, "invalid_argument", `after: ${desc}`, [
    { type: "sepp.v1.FieldViolation", field: "after", limit: "only in EnqueueBatch or AckRequest.follow_ups", description: desc },
  ]);
}

/** The request waits for others of its call (EnqueueRequest.after). */
function hasAfter(r: EnqueueRequest | undefined): boolean {
  return !!r && Array.isArray(r.after) && r.after.length > 0;
}

function validDate(d: unknown): boolean {
  return d instanceof Date && !Number.isNaN(d.getTime());
}

/**
 * @internal The wire form of r sent with the idempotency key key. The plain
 * fields are generated (enqueueRequestToJSON, src/gen/enqueue.ts); the
 * client writes the key and the payload, which may be given as text.
 */
export function enqueueToJSON(r: EnqueueRequest, key: string): EnqueueRequestJSON {
  const m = enqueueRequestToJSON(r);
  m.idempotencyKey = key;
  const p = payloadBytes(r.payload);
  if (p && p.length > 0) m.payload = bytesToBase64(p);
  return m;
}

function scheduleToJSON(op: string, d: ScheduleDefinition): ScheduleJSON {
  if (!d || typeof d !== "object") {
    throw new InvalidArgumentError(op, "invalid_argument", "schedule: must be a ScheduleDefinition", [
      { type: "sepp.v1.FieldViolation", field: "schedule", limit: "", description: "must be a ScheduleDefinition" },
    ]);
  }
  const m: ScheduleJSON = { name: d.name };
  if (d.cron) m.cron = d.cron;
  if (d.intervalMs !== undefined && d.intervalMs !== 0) {
    if (!(Number.isFinite(d.intervalMs) && d.intervalMs > 0)) {
      const desc = `must be a positive number of milliseconds, got ${d.intervalMs}`;
      throw new InvalidArgumentError(op, "invalid_argument", `interval: ${desc}`, [
        { type: "sepp.v1.FieldViolation", field: "interval", limit: "", description: desc },
      ]);
    }
    m.interval = durationJSON(d.intervalMs);
  }
  if (d.timeZone) m.timeZone = d.timeZone;
  const t = d.template ?? { queue: "", jobType: "" };
  const tm: JobTemplateJSON = { queue: t.queue, jobType: t.jobType };
  const p = payloadBytes(t.payload);
  if (p && p.length > 0) tm.payload = bytesToBase64(p);
  if (t.priority !== undefined) tm.priority = t.priority;
  if (t.custom && Object.keys(t.custom).length > 0) tm.custom = t.custom;
  if (t.maxAttempts) tm.maxAttempts = t.maxAttempts;
  m.template = tm;
  if (d.overlap) m.overlap = d.overlap === "allow" ? "SCHEDULE_OVERLAP_ALLOW" : "SCHEDULE_OVERLAP_SKIP";
  if (d.catchUp) m.catchUp = d.catchUp === "skip" ? "SCHEDULE_CATCH_UP_SKIP" : "SCHEDULE_CATCH_UP_ONCE";
  if (d.paused) m.paused = true;
  return m;
}

function normalizeAddr(a: string): string {
  const t = a.trim().replace(/\/+$/, "");
  return /^https?:\/\//.test(t) ? t : `http://${t}`;
}

/**
 * A client for a sepp cluster over the Connect protocol (JSON over fetch).
 * It follows the leader by itself and retries through failovers: an
 * enqueue keeps one idempotency key over all its retries and a reserve one
 * request id, so neither is applied twice; a drain, being destructive, is
 * retried only when the server said nothing was applied.
 */
export class SeppClient {
  private readonly opts: Required<Omit<ClientOptions, "token" | "headers" | "fetch" | "traceInjector">>;
  private readonly fetchFn: typeof fetch;
  private readonly traceInjector: (() => TraceContext | undefined) | undefined;
  private readonly headers: Record<string, string>;
  private readonly scheme: string;
  /** Base URLs of every node known, seeds first. */
  private readonly known: string[];
  private leader: string | undefined;
  private rotation = 0;
  private closed = false;
  /** Aborted by close(): ends every call in flight. */
  private readonly closing = new AbortController();

  private constructor(addrs: string[], options: ClientOptions) {
    this.known = addrs;
    this.scheme = addrs[0]!.startsWith("https://") ? "https" : "http";
    this.opts = {
      retryTimeoutMs: options.retryTimeoutMs ?? defaults.retryTimeoutMs,
      attemptTimeoutMs: options.attemptTimeoutMs ?? defaults.attemptTimeoutMs,
      backoffBaseMs: options.backoffBaseMs ?? defaults.backoffBaseMs,
      backoffMaxMs: options.backoffMaxMs ?? defaults.backoffMaxMs,
      leaderProbeMs: options.leaderProbeMs ?? defaults.leaderProbeMs,
    };
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new Error("sepp: no fetch in this runtime (Node 18 or later, or a browser, has one)");
    // Browsers refuse a fetch called as another object's method ("Illegal
    // invocation"): the global one is called through a wrapper.
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.headers = {
      "Content-Type": "application/json",
      "Connect-Protocol-Version": "1",
      ...(options.headers ?? {}),
    };
    if (options.token) this.headers["Authorization"] = `Bearer ${options.token}`;
    this.traceInjector = options.traceInjector;
  }

  /** m with the traceInjector's trace context, unless m has one. */
  withTrace(m: EnqueueRequestJSON): EnqueueRequestJSON {
    if (this.traceInjector && !m.traceContext) {
      const tc = this.traceInjector();
      if (tc && tc.traceparent) m.traceContext = traceContextToJSON(tc);
    }
    return m;
  }

  /**
   * A client for the cluster whose nodes answer at addrs: URLs
   * ("http://localhost:50051", "https://..."), or host:port (http), one
   * string (commas allowed) or several. It asks the nodes, in turn, who
   * leads and resolves once one answers; it rejects with UnavailableError
   * when none does within the retry budget.
   */
  static async connect(addrs: string | string[], options: ClientOptions = {}): Promise<SeppClient> {
    const list = (Array.isArray(addrs) ? addrs : [addrs])
      .flatMap((a) => a.split(","))
      .map((a) => a.trim())
      .filter((a) => a !== "")
      .map(normalizeAddr);
    const unique = [...new Set(list)];
    if (unique.length === 0) {
      throw new InvalidArgumentError("connect", "invalid_argument", "addrs: at least one node address is required", [
        { type: "sepp.v1.FieldViolation", field: "addrs", limit: "", description: "at least one node address is required" },
      ]);
    }
    await randomSource();
    const c = new SeppClient(unique, options);
    const info = await c.serverInfo({}, true);
    if (info.leaderAddr) c.followLeader(info.leaderAddr);
    return c;
  }

  /** The nodes' base URLs the client knows. */
  get addrs(): string[] {
    return [...this.known];
  }

  /** The base URL of the node the client takes for the leader, if any. */
  get leaderAddr(): string | undefined {
    return this.leader;
  }

  /** Ends every call in flight (they reject with ClosedError) and refuses new ones. */
  close(): void {
    this.closed = true;
    this.closing.abort();
  }

  private url(addr: string): string {
    return /^https?:\/\//.test(addr) ? addr.replace(/\/+$/, "") : `${this.scheme}://${addr}`;
  }

  private followLeader(addr: string): void {
    if (!addr) return;
    const u = this.url(addr);
    if (!this.known.includes(u)) this.known.push(u);
    this.leader = u;
  }

  private forget(base: string): void {
    if (this.leader === base) this.leader = undefined;
    const i = this.known.indexOf(base);
    if (i >= 0) this.rotation = i + 1;
  }

  private target(): string {
    if (this.leader) return this.leader;
    const base = this.known[this.rotation % this.known.length]!;
    this.rotation++;
    return base;
  }

  private backoff(n: number): number {
    let d = this.opts.backoffBaseMs;
    for (let i = 0; i < n && d < this.opts.backoffMaxMs; i++) d *= 2;
    d = Math.min(d, this.opts.backoffMaxMs);
    return d <= 1 ? d : d / 2 + Math.random() * (d / 2);
  }

  /** One HTTP POST of a Connect unary call to base. */
  private async attempt(
    base: string,
    op: string,
    path: string,
    body: object,
    extraMs: number,
    signal: AbortSignal | undefined,
    probe: boolean,
  ): Promise<JSONObject> {
    const ctl = new AbortController();
    let why: "caller" | "timeout" | "moved" | undefined;
    let movedTo = "";
    const onAbort = () => {
      why ??= "caller";
      ctl.abort();
    };
    signal?.addEventListener("abort", onAbort);
    this.closing.signal.addEventListener("abort", onAbort);
    const timeoutMs = this.opts.attemptTimeoutMs > 0 ? this.opts.attemptTimeoutMs + extraMs : 0;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            why ??= "timeout";
            ctl.abort();
          }, timeoutMs)
        : undefined;
    let probeTimer: ReturnType<typeof setTimeout> | undefined;
    let finished = false;
    if (probe && this.opts.leaderProbeMs > 0 && this.known.length > 1) {
      const ask = async () => {
        const to = await this.probeLeader(base);
        // The attempt may have ended while the nodes were asked: then
        // nothing is left to abandon, and no probe is due.
        if (finished || ctl.signal.aborted) return;
        if (to && this.url(to) !== base) {
          why ??= "moved";
          movedTo = to;
          ctl.abort();
          return;
        }
        probeTimer = setTimeout(ask, this.opts.leaderProbeMs);
      };
      probeTimer = setTimeout(ask, this.opts.leaderProbeMs + extraMs);
    }
    const headers: Record<string, string> = { ...this.headers };
    if (timeoutMs > 0) headers["Connect-Timeout-Ms"] = String(timeoutMs);
    try {
      let resp: Response;
      try {
        resp = await this.fetchFn(`${base}/${path}`, {
          method: "POST",
          headers,
          body: JSON.stringify(body),
          signal: ctl.signal,
        });
      } catch (e) {
        throw this.transportFailure(op, e, why, movedTo, base);
      }
      let text: string;
      try {
        text = await resp.text();
      } catch (e) {
        throw this.transportFailure(op, e, why, movedTo, base);
      }
      if (resp.ok) {
        const fwd = resp.headers.get(leaderHeader);
        if (fwd && this.url(fwd) !== base) this.followLeader(fwd);
        else this.leader = base;
        try {
          return obj(JSON.parse(text));
        } catch (e) {
          throw new AttemptFailure("final", new InternalError(op, "internal", `response is not JSON: ${String(e)}`));
        }
      }
      const err = parseErrorJSON(op, resp.status, text);
      if (err instanceof NotLeaderError) throw new AttemptFailure("not_applied", err, err.leaderAddr);
      switch (err.code) {
        case "unavailable":
        case "aborted":
        case "deadline_exceeded":
          // Unavailable without NotLeader: "no leader" or a transport
          // failure, which cannot be told apart and may follow the send.
          throw new AttemptFailure("maybe_applied", err);
      }
      throw new AttemptFailure("final", err);
    } finally {
      finished = true;
      if (timer) clearTimeout(timer);
      if (probeTimer) clearTimeout(probeTimer);
      signal?.removeEventListener("abort", onAbort);
      this.closing.signal.removeEventListener("abort", onAbort);
    }
  }

  private transportFailure(op: string, e: unknown, why: string | undefined, movedTo: string, base: string): AttemptFailure {
    if (why === "caller") {
      return new AttemptFailure("final", new CanceledError(op, "canceled", "call aborted", [], { cause: e }));
    }
    if (why === "moved") {
      return new AttemptFailure(
        "maybe_applied",
        new UnavailableError(op, "unavailable", `${base} stopped answering and ${movedTo} leads now`, [], { cause: e }),
        movedTo,
      );
    }
    if (why === "timeout") {
      return new AttemptFailure("maybe_applied", new UnavailableError(op, "deadline_exceeded", `${base}: attempt timed out`, [], { cause: e }));
    }
    // A refused connection never carried the request: nothing applied.
    const code = netCode(e);
    const kind = code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" ? "not_applied" : "maybe_applied";
    return new AttemptFailure(kind, new UnavailableError(op, "unavailable", `${base}: ${code || String(e)}`, [], { cause: e }));
  }

  /** Asks the nodes other than from who leads; "" when none names one. */
  private async probeLeader(from: string): Promise<string> {
    for (const base of this.known) {
      if (base === from) continue;
      const ctl = new AbortController();
      const t = setTimeout(() => ctl.abort(), Math.max(this.opts.leaderProbeMs, 50));
      try {
        const resp = await this.fetchFn(`${base}/sepp.v1.ClusterService/Status`, {
          method: "POST",
          headers: this.headers,
          body: "{}",
          signal: ctl.signal,
        });
        if (!resp.ok) {
          await resp.text().catch(() => "");
          continue;
        }
        const addr = str(message<StatusResponseJSON>(await resp.json()).leader?.grpcAddr);
        if (addr) return addr;
      } catch {
        // That node cannot say; ask the next.
      } finally {
        clearTimeout(t);
      }
    }
    return "";
  }

  /**
   * Runs one call against the leader, retrying per policy with jittered
   * exponential backoff until it succeeds, fails for good, or the retry
   * budget (retryTimeoutMs, the caller's signal) runs out. "safe" calls are
   * idempotent or fenced and retry whatever did not certainly fail for
   * good; "not_sent" calls (a drain) retry only what was certainly not
   * applied.
   *
   * Req and Res are the method's request and response messages as
   * generated from the protos (src/gen): every call site names them, so
   * the body it sends and the fields it reads are checked against the
   * protos at compile time.
   */
  private async call<Req extends object, Res extends object>(
    op: string,
    path: string,
    body: Req,
    policy: "safe" | "not_sent",
    extraMs: number,
    opts: CallOptions,
    onAnswer?: (maybeApplied: boolean) => void,
  ): Promise<Res> {
    const start = Date.now();
    let maybeApplied = false;
    let backoffN = 0;
    let redirects = 0;
    let last: SeppError | undefined;
    for (;;) {
      if (this.closed) throw new ClosedError(op);
      if (opts.signal?.aborted) {
        if (maybeApplied) throw new UnknownOutcomeError(op, "unknown", `aborted after an attempt that may have applied`, [], { cause: last });
        throw new CanceledError(op, "canceled", "call aborted", [], { cause: last });
      }
      const base = this.target();
      let failure: AttemptFailure;
      try {
        const res = await this.attempt(base, op, path, body, extraMs, opts.signal, policy === "safe");
        onAnswer?.(maybeApplied);
        return message<Res>(res);
      } catch (e) {
        if (!(e instanceof AttemptFailure)) throw e;
        failure = e;
      }
      if (this.closed) throw new ClosedError(op);
      if (failure.err instanceof CanceledError && opts.signal?.aborted) continue; // reported at the top
      last = failure.err;
      if (failure.kind === "final") {
        if (maybeApplied && failure.err instanceof LeaseLostError) {
          // A fenced retry finding the lease gone: the first attempt may
          // have taken effect, or the lease expired meanwhile.
          throw new UnknownOutcomeError(op, "unknown", `a retry found the lease gone after an attempt that may have applied: ${failure.err.rawMessage}`, failure.err.details, { cause: failure.err });
        }
        throw failure.err;
      }
      if (failure.kind === "maybe_applied") {
        if (policy === "not_sent") {
          throw new UnknownOutcomeError(op, "unknown", `not retried, it may have applied: ${failure.err.rawMessage}`, failure.err.details, { cause: failure.err });
        }
        maybeApplied = true;
      }
      const elapsed = Date.now() - start;
      if (this.opts.retryTimeoutMs <= 0 || elapsed >= this.opts.retryTimeoutMs) {
        if (maybeApplied) {
          throw new UnknownOutcomeError(op, "unknown", `retry budget spent: ${failure.err.rawMessage}`, failure.err.details, { cause: failure.err });
        }
        throw failure.err;
      }
      const hint = failure.leaderAddr ? this.url(failure.leaderAddr) : "";
      if (hint && hint !== base && redirects < 3) {
        // A fresh hint: follow it at once.
        this.followLeader(failure.leaderAddr);
        redirects++;
        continue;
      }
      redirects = 0;
      if (hint) this.followLeader(failure.leaderAddr);
      else this.forget(base);
      const wait = Math.min(this.backoff(backoffN++), Math.max(this.opts.retryTimeoutMs - elapsed, 0));
      await sleep(wait, opts.signal);
    }
  }

  // ---- producing ----

  /**
   * Adds one job. Unless the request sets an idempotency key, the client
   * generates one; either way the same key rides on every retry of this
   * call, so a retry through a failover never adds a second job. A lone
   * job has no other request to wait for: one with after is refused by
   * the server (InvalidArgumentError naming "after"); use enqueueBatch.
   */
  async enqueue(req: EnqueueRequest, opts: CallOptions = {}): Promise<EnqueueResult> {
    const bad = validateEnqueue(req, "");
    if (bad) throw bad;
    const key = req.idempotencyKey || newKey();
    let retried = false;
    const m = await this.call<EnqueueRequestJSON, EnqueueResponseJSON>("enqueue", "sepp.v1.QueueService/Enqueue", this.withTrace(enqueueToJSON(req, key)), "safe", 0, opts, (r) => (retried = r));
    return {
      jobId: u64(m.jobId),
      state: jobStateFromJSON(m.state),
      // A duplicate after a retry is our own first attempt's job.
      duplicate: m.duplicate === true && !retried,
      idempotencyKey: key,
    };
  }

  /**
   * Adds several jobs in one call; each item succeeds or fails on its own
   * and the results come back in order. Every item has its own idempotency
   * key, so a retried batch adds no job twice. The promise rejects only
   * when the call as a whole failed.
   *
   * A batch whose jobs wait for each other (EnqueueRequest.after: indexes
   * of earlier items) is a workflow, applied whole: every item succeeds,
   * or the promise rejects with the error of the item that refused it
   * (InvalidArgumentError naming jobs[i].after[k], say) and nothing is
   * enqueued. An item this client refuses itself then rejects the whole
   * call too, rather than being left out, which would shift the indexes.
   */
  async enqueueBatch(reqs: EnqueueRequest[], opts: CallOptions = {}): Promise<BatchResult[]> {
    const out: (BatchResult | undefined)[] = new Array(reqs.length);
    const wire: EnqueueRequestJSON[] = [];
    const keys: string[] = [];
    const idx: number[] = [];
    const whole = reqs.some(hasAfter);
    for (const [i, r] of reqs.entries()) {
      const bad = validateEnqueue(r, `jobs[${i}].`);
      if (bad && whole) throw bad; // jobs that wait for each other go whole or not at all
      if (bad) {
        out[i] = { ok: false, error: bad };
        continue;
      }
      const key = r.idempotencyKey || newKey();
      wire.push(this.withTrace(enqueueToJSON(r, key)));
      keys.push(key);
      idx.push(i);
    }
    if (wire.length > 0) {
      const results = await this.enqueueBatchWire(wire, keys, opts);
      results.forEach((r, wi) => (out[idx[wi]!] = r));
    }
    return out as BatchResult[];
  }

  /** @internal One EnqueueBatch call of jobs already in wire form. */
  async enqueueBatchWire(jobs: EnqueueRequestJSON[], keys: string[], opts: CallOptions): Promise<BatchResult[]> {
    let retried = false;
    const m = await this.call<EnqueueBatchRequestJSON, EnqueueBatchResponseJSON>("enqueue batch", "sepp.v1.QueueService/EnqueueBatch", { jobs }, "safe", 0, opts, (r) => (retried = r));
    const results = arr(m.results);
    if (results.length !== jobs.length) {
      throw new InternalError("enqueue batch", "internal", `server answered ${results.length} results for ${jobs.length} jobs`);
    }
    return results.map((v, i): BatchResult => {
      const r = message<EnqueueBatchResultJSON>(v);
      if (r.error) return { ok: false, error: itemError("enqueue", r.error) };
      const e = message<EnqueueResponseJSON>(r.enqueued);
      return {
        ok: true,
        result: {
          jobId: u64(e.jobId),
          state: jobStateFromJSON(e.state),
          duplicate: e.duplicate === true && !retried,
          idempotencyKey: keys[i]!,
        },
      };
    });
  }

  /** A producer that coalesces concurrent enqueues into EnqueueBatch calls. */
  producer(opts: ProducerOptions = {}): Producer {
    return new Producer(this, opts);
  }

  // ---- consuming ----

  /**
   * Leases up to opts.max Ready jobs of queue, highest priority first, FIFO
   * within a priority. Resolves to no deliveries when none was ready within
   * the wait. One request id rides on every retry, so a retry returns the
   * first attempt's deliveries instead of leasing more.
   */
  async reserve(queue: string, opts: ReserveOptions = {}): Promise<Delivery[]> {
    if (!queue) {
      throw new InvalidArgumentError("reserve", "invalid_argument", "queue: must not be empty", [
        { type: "sepp.v1.FieldViolation", field: "queue", limit: "", description: "must not be empty" },
      ]);
    }
    const body: ReserveRequestJSON = { queue, max: opts.max ?? 1, requestId: opts.requestId || newKey() };
    if (opts.workerId) body.workerId = opts.workerId;
    if (opts.leaseMs) body.lease = durationJSON(opts.leaseMs);
    const wait = opts.waitMs ?? 0;
    if (wait > 0) body.wait = durationJSON(wait);
    const m = await this.call<ReserveRequestJSON, ReserveResponseJSON>("reserve", "sepp.v1.QueueService/Reserve", body, "safe", wait, opts);
    return arr(m.jobs).map((v) => {
      const rj = message<ReservedJobJSON>(v);
      return { ctx: jobContextFromJSON(rj.ctx), job: jobFromJSON(rj.job) };
    });
  }

  /**
   * Waits until the job completed or died and resolves to its outcome
   * (bound it with opts.signal). It long-polls the leader, asking again each
   * time a poll runs out; through a leader change it retries on the new
   * leader, which answers the same (the outcome is replicated state).
   * Rejects with NotFoundError when the server holds no such job: never
   * enqueued, or gone without a record kept (completed and dead-letter
   * retention).
   */
  async wait(jobId: JobId, opts: CallOptions = {}): Promise<JobOutcome> {
    for (;;) {
      const out = await this.pollJob(jobId, WAIT_JOB_POLL_MS, opts);
      if (out.terminal) return out;
    }
  }

  /** One WaitJob call of at most timeoutMs (the server caps it at 60 s):
   * terminal is false when the job was still running at its end. */
  async pollJob(jobId: JobId, timeoutMs = WAIT_JOB_POLL_MS, opts: CallOptions = {}): Promise<JobOutcome> {
    const ms = Math.max(Math.floor(timeoutMs), 1);
    const m = await this.call<WaitJobRequestJSON, WaitJobResponseJSON>(
      "wait job", "sepp.v1.QueueService/WaitJob", { jobId, timeoutMs: String(ms) }, "safe", ms, opts);
    return jobOutcomeFromJSON(m);
  }

  /** Enqueues req, then waits for the new job's outcome. */
  async enqueueAndWait(req: EnqueueRequest, opts: CallOptions = {}): Promise<{ enqueued: EnqueueResult; outcome: JobOutcome }> {
    const enqueued = await this.enqueue(req, opts);
    return { enqueued, outcome: await this.wait(enqueued.jobId, opts) };
  }

  /** Completes a delivery: the job leaves the server. Rejects with
   * LeaseLostError when the lease was no longer this delivery's. */
  async ack(ctx: JobContext, opts: CallOptions = {}): Promise<void> {
    await this.call<AckRequestJSON, AckResponseJSON>("ack", "sepp.v1.QueueService/Ack", { ctx: jobContextToJSON(ctx) }, "safe", 0, opts);
  }

  /**
   * Completes a delivery with a result, kept with the completed job for its
   * queue's completed_retention_ms: wait and getJob return it. At most the
   * server's max_result_bytes (InvalidArgumentError over it). A queue that
   * keeps no completed jobs, or a cluster not yet upgraded, rejects it with
   * WrongStateError and the lease still holds: ack without it.
   */
  async ackWithResult(ctx: JobContext, result: Uint8Array, opts: CallOptions = {}): Promise<void> {
    await this.call<AckRequestJSON, AckResponseJSON>("ack", "sepp.v1.QueueService/Ack",
      { ctx: jobContextToJSON(ctx), result: bytesToBase64(result) }, "safe", 0, opts);
  }

  /**
   * Completes a delivery and enqueues followUps in the same log entry, all
   * or nothing; resolves to their results in order, as enqueue's (duplicate
   * when a job already holds the idempotency or unique key). result, when
   * not empty, is kept as ackWithResult keeps it.
   *
   * Fenced by the lease: a lost lease rejects with LeaseLostError and no
   * follow-up exists. A follow-up the server refuses (InvalidArgumentError
   * naming follow_ups[i], a full queue or budget, a refusing unique key)
   * rejects and nothing is applied, the lease still held; a cluster not yet
   * upgraded refuses follow-ups with WrongStateError. Each follow-up gets an
   * idempotency key unless it has one, so a retry cannot enqueue it twice;
   * a retry that finds the lease gone because the first attempt applied
   * rejects with UnknownOutcomeError, as ack does. At most the server's
   * max_batch_size follow-ups.
   */
  async ackWithFollowUps(ctx: JobContext, followUps: EnqueueRequest[], result?: Uint8Array, opts: CallOptions = {}): Promise<EnqueueResult[]> {
    const wire: EnqueueRequestJSON[] = [];
    const keys: string[] = [];
    for (const [i, r] of followUps.entries()) {
      const bad = validateEnqueue(r, `follow_ups[${i}].`);
      if (bad) throw bad;
      const key = r.idempotencyKey || newKey();
      wire.push(this.withTrace(enqueueToJSON(r, key)));
      keys.push(key);
    }
    const req: AckRequestJSON = { ctx: jobContextToJSON(ctx), followUps: wire };
    if (result && result.length > 0) req.result = bytesToBase64(result);
    let retried = false;
    const m = await this.call<AckRequestJSON, AckResponseJSON>("ack", "sepp.v1.QueueService/Ack", req, "safe", 0, opts, (r) => (retried = r));
    const got = arr(m.followUps);
    if (got.length !== keys.length) {
      throw new InternalError("ack", "internal", `server answered ${got.length} follow-up results for ${keys.length} follow-ups (a server older than follow-ups ignores them)`);
    }
    return got.map((v, i) => {
      const r = message<EnqueueResponseJSON>(v);
      return {
        jobId: u64(r.jobId),
        state: jobStateFromJSON(r.state),
        // A duplicate after a retry is our own first attempt's job.
        duplicate: r.duplicate === true && !retried,
        idempotencyKey: keys[i]!,
      };
    });
  }

  /**
   * Completes several deliveries in one call. Resolves to one entry per
   * delivery, in order: undefined when acked, else the error Ack would have
   * given for it alone. A call that fails as a whole rejects.
   */
  async ackBatch(ctxs: JobContext[], opts: CallOptions = {}): Promise<(SeppError | undefined)[]> {
    if (ctxs.length === 0) return [];
    let retried = false;
    const m = await this.call<AckBatchRequestJSON, AckBatchResponseJSON>(
      "ack batch",
      "sepp.v1.QueueService/AckBatch",
      { ctxs: ctxs.map(jobContextToJSON) },
      "safe",
      0,
      opts,
      (r) => (retried = r),
    );
    const results = arr(m.results);
    if (results.length !== ctxs.length) {
      throw new InternalError("ack batch", "internal", `server answered ${results.length} results for ${ctxs.length} deliveries`);
    }
    return results.map((v) => {
      const e = message<AckBatchResultJSON>(v).error;
      if (!e) return undefined;
      const err = itemError("ack", e);
      if (retried && err instanceof LeaseLostError) {
        return new UnknownOutcomeError("ack", "unknown", `a retry found the lease gone after an attempt that may have applied`, err.details, { cause: err });
      }
      return err;
    });
  }

  /**
   * Fails a delivery; the directive says what happens next. Resolves to
   * true exactly when the job was dead-lettered (deadLetter(), or the
   * failing attempt reached max_attempts).
   */
  async nack(ctx: JobContext, directive: RetryDirective = RetryDirective.default(), reason = "", opts: CallOptions = {}): Promise<boolean> {
    let d: RetryDirectiveJSON;
    switch (directive.kind) {
      case "after":
        if (!(directive.delayMs >= 0)) {
          throw new InvalidArgumentError("nack", "invalid_argument", `directive.after: must not be negative, got ${directive.delayMs}`, [
            { type: "sepp.v1.FieldViolation", field: "directive.after", limit: "", description: "must not be negative" },
          ]);
        }
        d = { after: durationJSON(directive.delayMs) };
        break;
      case "dead_letter":
        d = { deadLetter: {} };
        break;
      default:
        d = { default: {} };
    }
    const m = await this.call<NackRequestJSON, NackResponseJSON>("nack", "sepp.v1.QueueService/Nack", { ctx: jobContextToJSON(ctx), directive: d, reason }, "safe", 0, opts);
    return m.deadLettered === true;
  }

  /** Hands a delivery back without burning an attempt: Ready again at once. */
  async release(ctx: JobContext, opts: CallOptions = {}): Promise<void> {
    await this.call<ReleaseRequestJSON, ReleaseResponseJSON>("release", "sepp.v1.QueueService/Release", { ctx: jobContextToJSON(ctx) }, "safe", 0, opts);
  }

  /** Extends a delivery's lease to leaseMs from now; resolves to the new deadline. */
  async extendLease(ctx: JobContext, leaseMs: number, opts: CallOptions = {}): Promise<Date> {
    const m = await this.call<ExtendLeaseRequestJSON, ExtendLeaseResponseJSON>(
      "extend lease",
      "sepp.v1.QueueService/ExtendLease",
      { ctx: jobContextToJSON(ctx), lease: durationJSON(leaseMs) },
      "safe",
      0,
      opts,
    );
    const d = timeFrom(m.leaseDeadline);
    if (!d) throw new InternalError("extend lease", "internal", "server answered no lease deadline");
    return d;
  }

  /**
   * Reports a running job's progress (percent 0..100, a message of at most
   * 256 bytes of UTF-8) and extends its lease to leaseMs from now (0: the
   * server's default lease), in one call and one log entry; resolves to
   * the new deadline. getJob, listJobs and wait show it (Job.progress)
   * until the delivery ends. Out of bounds: InvalidArgumentError naming
   * progress.percent or progress.message. While some member of the
   * cluster does not keep progress yet (a rolling upgrade) it rejects with
   * WrongStateError (VERSION feature=progress) and extends nothing.
   */
  async reportProgress(ctx: JobContext, percent: number, message = "", leaseMs = 0, opts: CallOptions = {}): Promise<Date> {
    checkProgress("report progress", percent, message);
    const body: ExtendLeaseRequestJSON = { ctx: jobContextToJSON(ctx), progress: { percent, message } };
    if (leaseMs > 0) body.lease = durationJSON(leaseMs);
    const m = await this.call<ExtendLeaseRequestJSON, ExtendLeaseResponseJSON>("report progress", "sepp.v1.QueueService/ExtendLease", body, "safe", 0, opts);
    const d = timeFrom(m.leaseDeadline);
    if (!d) throw new InternalError("report progress", "internal", "server answered no lease deadline");
    return d;
  }

  /**
   * Removes and returns up to max dead-letter records, oldest first, of
   * queue (undefined: every queue). Destructive: a lost response loses
   * that batch, so it is retried only when the server said nothing was
   * applied; otherwise it rejects with UnknownOutcomeError.
   */
  async drainDeadLetters(queue: string | undefined, max: number, opts: CallOptions = {}): Promise<DeadLetterRecord[]> {
    const body: DrainDeadLettersRequestJSON = { max };
    if (queue !== undefined) body.queue = queue;
    const m = await this.call<DrainDeadLettersRequestJSON, DrainDeadLettersResponseJSON>("drain dead letters", "sepp.v1.QueueService/DrainDeadLetters", body, "not_sent", 0, opts);
    return arr(m.records).map(deadLetterFromJSON);
  }

  // ---- reading ----

  /** The leader's view (or, with stale, the answering node's). */
  async serverInfo(opts: CallOptions = {}, stale = false): Promise<ServerInfo> {
    return serverInfoFromJSON(
      await this.call<GetServerInfoRequestJSON, GetServerInfoResponseJSON>("server info", "sepp.v1.QueueService/GetServerInfo", { allowStale: stale }, "safe", 0, opts),
    );
  }

  /** One job, with its history. */
  async getJob(id: string, opts: CallOptions = {}): Promise<Job> {
    const m = await this.call<GetJobRequestJSON, GetJobResponseJSON>("get job", "sepp.v1.AdminService/GetJob", { jobId: id }, "safe", 0, opts);
    return jobFromJSON(m.job);
  }

  /**
   * The results of parents, a job's Job.parents (a Worker's handler has
   * them in delivery.job.parents), in the same order. A delivery's and
   * getJob's parents come with their kept results (resultKept), up to a
   * bound per answer; for a completed parent whose result the answer left
   * out (resultOmitted), or that came from elsewhere (such as listJobs),
   * it makes a getJob of the parent, which needs a token with the viewer
   * role. A callback enqueued after a batch's jobs (after, onParentFailure
   * "run") reads their outcomes and results so. A completed parent is
   * kept, with its result, while its queue keeps completed jobs
   * (completedRetentionMs); one not kept, or not completed, comes back
   * with kept false and an empty result. Any other failure of a read
   * rejects.
   */
  async parentResults(parents: JobParent[], opts: CallOptions = {}): Promise<ParentResult[]> {
    const out: ParentResult[] = parents.map((p) =>
      p.state === "completed" && p.resultKept && !p.resultOmitted
        ? { ...p, kept: true } // carried by the answer
        : { ...p, result: new Uint8Array(0), kept: false },
    );
    const todo = out.filter((p) => p.state === "completed" && !p.kept);
    // A few reads at a time: a callback may have thousands of parents.
    let next = 0;
    const read = async () => {
      while (next < todo.length) {
        const p = todo[next++]!;
        try {
          p.result = (await this.getJob(p.jobId, opts)).result;
          p.kept = true;
        } catch (e) {
          if (e instanceof NotFoundError) continue; // completed, its record not kept
          next = todo.length; // the call fails: the other readers stop
          throw e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARENT_READS, todo.length) }, read));
    return out;
  }

  // ---- operator calls: queues, jobs, dead letters ----

  /** Every known queue with its counts. */
  async listQueues(opts: CallOptions = {}, stale = false): Promise<QueueStats[]> {
    return this.listQueuesByTag([], opts, stale);
  }

  /**
   * The queues whose tags match every term: "key=value" (the tag with that
   * value) or "key" (the tag, any value); no term lists every queue.
   */
  async listQueuesByTag(tags: string[], opts: CallOptions = {}, stale = false): Promise<QueueStats[]> {
    const body: ListQueuesRequestJSON = { allowStale: stale };
    if (tags.length > 0) body.tag = [...tags];
    const m = await this.call<ListQueuesRequestJSON, ListQueuesResponseJSON>("list queues", "sepp.v1.AdminService/ListQueues", body, "safe", 0, opts);
    return arr(m.queues).map(queueStatsFromJSON);
  }

  /**
   * A page of a queue's jobs in one state ("scheduled", "ready",
   * "reserved", "blocked", or "completed" while the queue keeps completed
   * jobs), by job id, and the afterJobId of the next page ("0": this page
   * is the last).
   */
  async listJobs(queue: string, state: JobState, page: ListOptions = {}): Promise<{ jobs: Job[]; next: JobId }> {
    const body: ListJobsRequestJSON = { queue, state: `JOB_STATE_${state.toUpperCase()}` as ListJobsRequestJSON["state"] };
    if (page.afterJobId) body.afterJobId = page.afterJobId;
    if (page.limit) body.limit = page.limit;
    if (page.stale) body.allowStale = true;
    const m = await this.call<ListJobsRequestJSON, ListJobsResponseJSON>("list jobs", "sepp.v1.AdminService/ListJobs", body, "safe", 0, page);
    return { jobs: arr(m.jobs).map(jobFromJSON), next: u64(m.nextAfterJobId) };
  }

  /** A page of retained dead letters of queue ("" or undefined: all
   * queues), without consuming them, and the afterJobId of the next page. */
  async listDeadLetters(queue = "", page: ListOptions = {}): Promise<{ records: DeadLetterRecord[]; next: JobId }> {
    const body: ListDeadLettersRequestJSON = { queue };
    if (page.afterJobId) body.afterJobId = page.afterJobId;
    if (page.limit) body.limit = page.limit;
    if (page.stale) body.allowStale = true;
    const m = await this.call<ListDeadLettersRequestJSON, ListDeadLettersResponseJSON>("list dead letters", "sepp.v1.AdminService/ListDeadLetters", body, "safe", 0, page);
    return { records: arr(m.records).map(deadLetterFromJSON), next: u64(m.nextAfterJobId) };
  }

  /** One retained dead letter; NotFoundError when there is none. */
  async getDeadLetter(id: JobId, opts: CallOptions = {}): Promise<DeadLetterRecord> {
    const m = await this.call<GetDeadLetterRequestJSON, GetDeadLetterResponseJSON>("get dead letter", "sepp.v1.AdminService/GetDeadLetter", { jobId: id }, "safe", 0, opts);
    return deadLetterFromJSON(m.record);
  }

  private async action(op: string, method: string, body: object, opts: CallOptions): Promise<ActionResult[]> {
    const m = await this.call<object, { results?: JobActionResultJSON[] }>(op, `sepp.v1.AdminService/${method}`, body, "safe", 0, opts);
    return arr(m.results).map((v) => {
      const r = message<JobActionResultJSON>(v);
      const out: ActionResult = { jobId: u64(r.jobId) };
      if (r.error) out.error = itemError(op, r.error);
      return out;
    });
  }

  /** Puts dead letters back Ready on their queue with their ids, attempts
   * reset; one result per id, in order. */
  requeueDeadLetters(ids: JobId[], opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("requeue dead letters", "RequeueDeadLetters", { jobIds: ids }, opts);
  }

  /** Removes dead letters for good. */
  deleteDeadLetters(ids: JobId[], opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("delete dead letters", "DeleteDeadLetters", { jobIds: ids }, opts);
  }

  /** Dead-letters live Ready or Scheduled jobs with cause "admin" and the
   * reason as their last reason. */
  deadLetterJobs(ids: JobId[], reason = "", opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("dead-letter jobs", "DeadLetterJobs", { jobIds: ids, reason }, opts);
  }

  /** Removes Ready or Scheduled jobs for good; a reserved one gets a
   * WrongStateError in its result. */
  deleteJobs(ids: JobId[], opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("delete jobs", "DeleteJobs", { jobIds: ids }, opts);
  }

  /** Makes Scheduled jobs Ready now. */
  runJobsNow(ids: JobId[], opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("run jobs now", "RunJobsNow", { jobIds: ids }, opts);
  }

  /** Holds Ready or Scheduled jobs until runAt (at or before now: Ready);
   * beyond the queue's horizon is a ScheduledTooFarError in the result. */
  rescheduleJobs(ids: JobId[], runAt: Date, opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("reschedule jobs", "RescheduleJobs", { jobIds: ids, runAt: runAt.toISOString() }, opts);
  }

  /** Gives live jobs a priority (0..9); a Ready job takes its place by it
   * and its original enqueue time. */
  setJobsPriority(ids: JobId[], priority: Priority | number, opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("set jobs priority", "SetJobsPriority", { jobIds: ids, priority }, opts);
  }

  /**
   * Cancels Reserved jobs: each lease is revoked at once (the worker's
   * next extend, ack or nack rejects with JobCancelledError) and the job
   * is dead-lettered with cause "cancelled", or removed with
   * options.delete. A job no worker holds gets a WrongStateError.
   */
  cancelJobs(ids: JobId[], options: { delete?: boolean; reason?: string } = {}, opts: CallOptions = {}): Promise<ActionResult[]> {
    return this.action("cancel jobs", "CancelJobs", { jobIds: ids, delete: options.delete === true, reason: options.reason ?? "" }, opts);
  }

  /** Stops reserves handing out the queue's jobs; enqueues go on. */
  async pauseQueue(queue: string, opts: CallOptions = {}): Promise<void> {
    await this.call<PauseQueueRequestJSON, PauseQueueResponseJSON>("pause queue", "sepp.v1.AdminService/PauseQueue", { queue }, "safe", 0, opts);
  }

  /** Undoes pauseQueue. */
  async resumeQueue(queue: string, opts: CallOptions = {}): Promise<void> {
    await this.call<ResumeQueueRequestJSON, ResumeQueueResponseJSON>("resume queue", "sepp.v1.AdminService/ResumeQueue", { queue }, "safe", 0, opts);
  }

  // ---- operator calls: queues as managed objects ----

  /**
   * Adds a queue with its own settings (undefined fields inherit) and
   * resolves to what it runs with. A queue that exists rejects with
   * AlreadyExistsError, a setting out of range with InvalidArgumentError
   * naming it, a deadLetterQueue that does not exist with NotFoundError.
   * Not retried once it may have been applied (the retry would find it).
   */
  async createQueue(name: string, settings: QueueSettings = {}, options: { paused?: boolean } = {}, opts: CallOptions = {}): Promise<EffectiveQueueSettings> {
    const body: CreateQueueRequestJSON = { name, settings: queueSettingsToJSON(settings) };
    if (options.paused) body.paused = true;
    const m = await this.call<CreateQueueRequestJSON, CreateQueueResponseJSON>("create queue", "sepp.v1.AdminService/CreateQueue", body, "not_sent", 0, opts);
    return queueLimitsFromJSON(m.effective);
  }

  /** One queue: its counts, own settings and effective settings;
   * NotFoundError when there is no such queue. */
  async getQueue(name: string, opts: CallOptions = {}, stale = false): Promise<QueueInfo> {
    const m = await this.call<GetQueueRequestJSON, GetQueueResponseJSON>("get queue", "sepp.v1.AdminService/GetQueue", { name, allowStale: stale }, "safe", 0, opts);
    return { stats: queueStatsFromJSON(m.summary), settings: queueSettingsFromJSON(m.settings), effective: queueLimitsFromJSON(m.effective) };
  }

  /** Changes a queue (see QueueUpdate) and resolves to its effective
   * settings; NotFoundError for an unknown queue. Idempotent, so retried. */
  async updateQueue(name: string, update: QueueUpdate, opts: CallOptions = {}): Promise<EffectiveQueueSettings> {
    const body: UpdateQueueRequestJSON = { name, settings: queueSettingsToJSON(update.settings), inherit: update.inherit ?? [] };
    if (update.paused !== undefined) body.paused = update.paused;
    const m = await this.call<UpdateQueueRequestJSON, UpdateQueueResponseJSON>("update queue", "sepp.v1.AdminService/UpdateQueue", body, "safe", 0, opts);
    return queueLimitsFromJSON(m.effective);
  }

  /** Removes a queue. One holding jobs or dead letters rejects with
   * WrongStateError unless force, which removes them and counts them. Not
   * retried once it may have been applied. */
  async deleteQueue(name: string, force = false, opts: CallOptions = {}): Promise<QueueRemoval> {
    const m = await this.call<DeleteQueueRequestJSON, DeleteQueueResponseJSON>("delete queue", "sepp.v1.AdminService/DeleteQueue", { name, force }, "not_sent", 0, opts);
    return { jobs: num(m.jobsRemoved), deadLetters: num(m.deadLettersRemoved) };
  }

  /** Removes a queue's waiting jobs (reserved ones stay) or its dead
   * letters, and counts them. Not retried once it may have been applied. */
  async purgeQueue(name: string, target: PurgeTarget, opts: CallOptions = {}): Promise<QueueRemoval> {
    if (target !== "waiting" && target !== "dead_letters") {
      throw new InvalidArgumentError("purge queue", "invalid_argument", `target must be "waiting" or "dead_letters", got ${String(target)}`, [
        { type: "sepp.v1.FieldViolation", field: "target", limit: "", description: "must be waiting or dead_letters" },
      ]);
    }
    const body: PurgeQueueRequestJSON = { name, target: target === "waiting" ? "PURGE_TARGET_WAITING" : "PURGE_TARGET_DEAD_LETTERS" };
    const m = await this.call<PurgeQueueRequestJSON, PurgeQueueResponseJSON>("purge queue", "sepp.v1.AdminService/PurgeQueue", body, "not_sent", 0, opts);
    return { jobs: num(m.jobsRemoved), deadLetters: num(m.deadLettersRemoved) };
  }

  // ---- operator calls: redrive ----

  /** What startRedrive(options) would move, without starting it: the count
   * and the first sample records (0: 10). */
  async previewRedrive(options: RedriveOptions, sample = 0, opts: CallOptions = {}): Promise<{ matching: number; sample: DeadLetterRecord[] }> {
    const body: PreviewRedriveRequestJSON = { redrive: redriveToJSON(options), sample };
    const m = await this.call<PreviewRedriveRequestJSON, PreviewRedriveResponseJSON>("preview redrive", "sepp.v1.AdminService/PreviewRedrive", body, "safe", 0, opts);
    return { matching: num(m.matching), sample: arr(m.sample).map(deadLetterFromJSON) };
  }

  /** Starts a redrive task over the dead letters failed by now that the
   * selection matches. Not retried once it may have been applied (a retry
   * would start a second task). */
  async startRedrive(options: RedriveOptions, opts: CallOptions = {}): Promise<RedriveTask> {
    const m = await this.call<StartRedriveRequestJSON, StartRedriveResponseJSON>("start redrive", "sepp.v1.AdminService/StartRedrive", redriveToJSON(options), "not_sent", 0, opts);
    return redriveTaskFromJSON(m.task);
  }

  /** The running and paused tasks and the last ended ones. */
  async listRedrives(opts: CallOptions = {}, stale = false): Promise<RedriveTask[]> {
    const m = await this.call<ListRedrivesRequestJSON, ListRedrivesResponseJSON>("list redrives", "sepp.v1.AdminService/ListRedrives", { allowStale: stale }, "safe", 0, opts);
    return arr(m.tasks).map(redriveTaskFromJSON);
  }

  /** One task or audit record; NotFoundError when there is none. */
  async getRedrive(id: string, opts: CallOptions = {}, stale = false): Promise<RedriveTask> {
    const m = await this.call<GetRedriveRequestJSON, GetRedriveResponseJSON>("get redrive", "sepp.v1.AdminService/GetRedrive", { id, allowStale: stale }, "safe", 0, opts);
    return redriveTaskFromJSON(m.task);
  }

  /** Pauses a running task; one in another state rejects with WrongStateError. */
  pauseRedrive(id: string, opts: CallOptions = {}): Promise<RedriveTask> {
    return this.redriveAction("pause redrive", "PauseRedrive", id, opts);
  }

  /** Resumes a paused task; one in another state rejects with WrongStateError. */
  resumeRedrive(id: string, opts: CallOptions = {}): Promise<RedriveTask> {
    return this.redriveAction("resume redrive", "ResumeRedrive", id, opts);
  }

  /** Ends a running or paused task; what it moved stays moved. */
  cancelRedrive(id: string, opts: CallOptions = {}): Promise<RedriveTask> {
    return this.redriveAction("cancel redrive", "CancelRedrive", id, opts);
  }

  private async redriveAction(op: string, method: string, id: string, opts: CallOptions): Promise<RedriveTask> {
    const m = await this.call<{ id: string }, { task?: RedriveTaskJSON }>(op, `sepp.v1.AdminService/${method}`, { id }, "safe", 0, opts);
    return redriveTaskFromJSON(m.task);
  }

  // ---- periodic schedules ----

  /**
   * Creates a schedule. A schedule of that name existing rejects with
   * AlreadyExistsError; a bad spec, zone or template with
   * InvalidArgumentError naming the field ("cron", "interval",
   * "time_zone", "template.queue", ...). Not retried once it may have been
   * applied (the retry would find its own schedule): that rejects with
   * UnknownOutcomeError.
   */
  async createSchedule(def: ScheduleDefinition, opts: CallOptions = {}): Promise<Schedule> {
    const body = { schedule: scheduleToJSON("create schedule", def) };
    const m = await this.call<CreateScheduleRequestJSON, CreateScheduleResponseJSON>("create schedule", "sepp.v1.AdminService/CreateSchedule", body, "not_sent", 0, opts);
    return scheduleFromJSON(m.schedule);
  }

  /**
   * Replaces a schedule's whole definition (def.paused is ignored: the
   * schedule keeps its paused state). It keeps the last fired tick, so no
   * tick fires twice. An unknown name rejects with NotFoundError. Retried:
   * the same definition applied twice is applied once.
   */
  async updateSchedule(def: ScheduleDefinition, opts: CallOptions = {}): Promise<Schedule> {
    const body = { schedule: scheduleToJSON("update schedule", def) };
    const m = await this.call<UpdateScheduleRequestJSON, UpdateScheduleResponseJSON>("update schedule", "sepp.v1.AdminService/UpdateSchedule", body, "safe", 0, opts);
    return scheduleFromJSON(m.schedule);
  }

  /** Removes a schedule (the jobs it fired stay); an unknown name rejects
   * with NotFoundError. Not retried once it may have been applied. */
  async deleteSchedule(name: string, opts: CallOptions = {}): Promise<void> {
    await this.call<DeleteScheduleRequestJSON, DeleteScheduleResponseJSON>("delete schedule", "sepp.v1.AdminService/DeleteSchedule", { name }, "not_sent", 0, opts);
  }

  /** One schedule with its next fire times (opts.nextFireTimes, default 5);
   * an unknown name rejects with NotFoundError. */
  async getSchedule(name: string, opts: ScheduleReadOptions = {}): Promise<Schedule> {
    const body: GetScheduleRequestJSON = { name };
    if (opts.nextFireTimes) body.nextFireTimes = opts.nextFireTimes;
    if (opts.stale) body.allowStale = true;
    const m = await this.call<GetScheduleRequestJSON, GetScheduleResponseJSON>("get schedule", "sepp.v1.AdminService/GetSchedule", body, "safe", 0, opts);
    return scheduleFromJSON(m.schedule);
  }

  /** Every schedule, by name, each with its next fire times
   * (opts.nextFireTimes, default 1). */
  async listSchedules(opts: ScheduleReadOptions = {}): Promise<Schedule[]> {
    const body: ListSchedulesRequestJSON = {};
    if (opts.nextFireTimes) body.nextFireTimes = opts.nextFireTimes;
    if (opts.stale) body.allowStale = true;
    const m = await this.call<ListSchedulesRequestJSON, ListSchedulesResponseJSON>("list schedules", "sepp.v1.AdminService/ListSchedules", body, "safe", 0, opts);
    return arr(m.schedules).map(scheduleFromJSON);
  }

  /** Stops a schedule firing; its nextFireTimes are empty while paused.
   * Retried: pausing twice is pausing. */
  async pauseSchedule(name: string, opts: CallOptions = {}): Promise<Schedule> {
    const m = await this.call<PauseScheduleRequestJSON, PauseScheduleResponseJSON>("pause schedule", "sepp.v1.AdminService/PauseSchedule", { name }, "safe", 0, opts);
    return scheduleFromJSON(m.schedule);
  }

  /** Restarts a paused schedule from its first tick after now (the paused
   * ticks are not caught up). Retried: a second resume only recomputes the
   * next tick. */
  async resumeSchedule(name: string, opts: CallOptions = {}): Promise<Schedule> {
    const m = await this.call<ResumeScheduleRequestJSON, ResumeScheduleResponseJSON>("resume schedule", "sepp.v1.AdminService/ResumeSchedule", { name }, "safe", 0, opts);
    return scheduleFromJSON(m.schedule);
  }
}

/**
 * Coalesces concurrent enqueues into EnqueueBatch calls, for throughput:
 * many callers can hand it jobs and each gets its own result. Retries and
 * idempotency are those of enqueueBatch: every job has its own key, so a
 * retried batch adds no job twice.
 */
export class Producer {
  private readonly lingerMs: number;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private pending: { m: EnqueueRequestJSON; key: string; resolve: (r: EnqueueResult) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private idle: (() => void)[] = [];

  constructor(
    private readonly client: SeppClient,
    opts: ProducerOptions,
  ) {
    this.lingerMs = opts.lingerMs ?? 1;
    this.maxBatch = opts.maxBatch ?? 256;
    this.maxInFlight = opts.maxInFlight ?? 4;
  }

  /** Queues one job for the next batch; resolves to its own result. A job
   * with after is refused (InvalidArgumentError naming "after"): the
   * batches a producer makes are not the caller's, so there is no earlier
   * request of the same call to wait for; use enqueueBatch. */
  enqueue(req: EnqueueRequest): Promise<EnqueueResult> {
    if (this.closed) return Promise.reject(new ClosedError("enqueue"));
    const bad = validateEnqueue(req, "") ?? (hasAfter(req) ? afterRefused("enqueue") : undefined);
    if (bad) return Promise.reject(bad);
    const key = req.idempotencyKey || newKey();
    return new Promise((resolve, reject) => {
      this.pending.push({ m: this.client.withTrace(enqueueToJSON(req, key)), key, resolve, reject });
      if (this.pending.length >= this.maxBatch) this.flush();
      else if (!this.timer) this.timer = setTimeout(() => this.flush(), this.lingerMs);
    });
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.pending.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.pending.splice(0, this.maxBatch);
      this.inFlight++;
      void this.client
        .enqueueBatchWire(
          batch.map((b) => b.m),
          batch.map((b) => b.key),
          {},
        )
        .then(
          (results) =>
            results.forEach((r, i) => {
              const b = batch[i]!;
              if (r.ok) b.resolve(r.result);
              else b.reject(r.error);
            }),
          (e) => batch.forEach((b) => b.reject(e)),
        )
        .finally(() => {
          this.inFlight--;
          if (this.pending.length > 0) this.flush();
          else if (this.inFlight === 0) this.idle.splice(0).forEach((f) => f());
        });
    }
  }

  /** Sends what is queued, waits for every result, and refuses new jobs. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pending.length > 0) this.flush();
    if (this.inFlight === 0 && this.pending.length === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }
}

export type { ErrorDetail };
