// The TypeScript runner of the SDK conformance suite (conformance/ at the
// repository's root): it interprets the scenario files with SeppClient. The
// format and the step vocabulary are in conformance/README.md; the Go
// runner (conformance/runner_test.go) is the reference this one follows.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  AlreadyExistsError,
  DeadLetterCause,
  DeadLetterRecord,
  Delivery,
  EnqueueRequest,
  InternalError,
  InvalidArgumentError,
  Job,
  JobCancelledError,
  JobState,
  LeaseLostError,
  NotFoundError,
  PermissionDeniedError,
  QueueFullError,
  ResourceExhaustedError,
  RetryDirective,
  ScheduledTooFarError,
  SeppClient,
  SeppError,
  UnauthenticatedError,
  UnavailableError,
  UniqueConflictError,
  UnknownOutcomeError,
  WrongStateError,
} from "../src/index.js";
import type { ActionResult, BatchResult, QueueSettings, QueueStats, RedriveOptions, RedriveTask, Schedule, ScheduleDefinition } from "../src/index.js";

const here = dirname(fileURLToPath(import.meta.url));
// Compiled to dist/test/; the scenarios are at the repository's root.
export const scenarioDir = resolve(here, "../../../../conformance/scenarios");

/** A step did not do what its scenario expects, or the scenario is malformed. */
export class Mismatch extends Error {}

/** A failed call, named by the suite's error kind. */
class StepError extends Error {
  constructor(readonly kind: string, readonly field: string, readonly err: unknown) {
    super(`${kind} (field ${JSON.stringify(field)}): ${err instanceof Error ? err.message : String(err)}`);
  }
}

type Value = null | boolean | number | string | Value[] | { [k: string]: Value };
type Obj = { [k: string]: Value };

export interface Step {
  op: string;
  args: Obj;
  expect?: Value;
  error?: { kind: string; field?: string };
  save: Record<string, string>;
  within_ms: number;
}

export interface Scenario {
  description: string;
  steps: Step[];
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function parseScenario(text: string): Scenario {
  const raw: unknown = JSON.parse(text);
  if (!isObj(raw) || !Array.isArray(raw.steps)) throw new Mismatch("a scenario is an object with steps");
  for (const k of Object.keys(raw)) if (k !== "description" && k !== "steps") throw new Mismatch(`unknown scenario field ${k}`);
  const steps = raw.steps.map((s): Step => {
    if (!isObj(s) || typeof s.op !== "string") throw new Mismatch("a step is an object with an op");
    for (const k of Object.keys(s)) {
      if (!["op", "args", "expect", "error", "save", "within_ms"].includes(k)) throw new Mismatch(`unknown step field ${k}`);
    }
    const step: Step = { op: s.op, args: isObj(s.args) ? s.args : {}, save: {}, within_ms: typeof s.within_ms === "number" ? s.within_ms : 0 };
    if ("expect" in s) step.expect = s.expect as Value;
    if (isObj(s.error)) {
      for (const k of Object.keys(s.error)) if (k !== "kind" && k !== "field") throw new Mismatch(`unknown error field ${k}`);
      step.error = { kind: String(s.error.kind) };
      if (typeof s.error.field === "string") step.error.field = s.error.field;
    }
    if (isObj(s.save)) for (const [k, v] of Object.entries(s.save)) step.save[k] = String(v);
    return step;
  });
  if (steps.length === 0) throw new Mismatch("no steps");
  return { description: typeof raw.description === "string" ? raw.description : "", steps };
}

export function loadScenarios(): Map<string, Scenario> {
  const out = new Map<string, Scenario>();
  for (const f of readdirSync(scenarioDir).filter((f) => f.endsWith(".json")).sort()) {
    out.set(f.slice(0, -".json".length), parseScenario(readFileSync(join(scenarioDir, f), "utf8")));
  }
  return out;
}

const varRef = /\$\{([A-Za-z0-9_]+)\}/g;

/** ${name} in every string: a string that is only a reference takes the
 * value with its type; inside a longer one the value is written in. */
export function substitute(v: Value | undefined, vars: Map<string, Value>): Value | undefined {
  if (typeof v === "string") {
    const whole = /^\$\{([A-Za-z0-9_]+)\}$/.exec(v);
    const get = (name: string): Value => {
      if (!vars.has(name)) throw new Mismatch(`unknown variable \${${name}}`);
      return vars.get(name) as Value;
    };
    if (whole) return get(whole[1]!);
    return v.replace(varRef, (_, name: string) => String(get(name)));
  }
  if (Array.isArray(v)) return v.map((e) => substitute(e, vars) as Value);
  if (isObj(v)) {
    const out: Obj = {};
    for (const [k, e] of Object.entries(v)) out[k] = substitute(e, vars) as Value;
    return out;
  }
  return v;
}

const show = (v: unknown) => JSON.stringify(v === undefined ? null : v);

/** Throws Mismatch where actual differs: objects match partially (null
 * expects the key unset or null), arrays element by element, scalars by
 * value. */
export function match(path: string, expected: Value, actual: Value | undefined): void {
  if (expected === null) {
    if (actual !== null && actual !== undefined) throw new Mismatch(`${path}: expected null, got ${show(actual)}`);
  } else if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) throw new Mismatch(`${path}: expected an array, got ${show(actual)}`);
    if (actual.length !== expected.length) throw new Mismatch(`${path}: expected ${expected.length} elements, got ${actual.length}: ${show(actual)}`);
    expected.forEach((e, i) => match(`${path}[${i}]`, e, actual[i]));
  } else if (isObj(expected)) {
    if (!isObj(actual)) throw new Mismatch(`${path}: expected an object, got ${show(actual)}`);
    for (const k of Object.keys(expected).sort()) match(`${path}.${k}`, expected[k]!, actual[k]);
  } else if (expected !== actual) {
    throw new Mismatch(`${path}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

function lookup(v: Value, path: string): Value {
  for (const part of path.split(".")) {
    if (isObj(v) && part in v) v = v[part]!;
    else if (Array.isArray(v) && /^\d+$/.test(part) && Number(part) < v.length) v = v[Number(part)]!;
    else throw new Mismatch(`no ${JSON.stringify(part)} in ${show(v)}`);
  }
  return v;
}

// The suite's error kinds, the most specific first (a cancelled lease is
// also a lost one; a unique conflict an AlreadyExists).
const kinds: [string, new (...a: never[]) => SeppError][] = [
  ["job_cancelled", JobCancelledError],
  ["lease_lost", LeaseLostError],
  ["scheduled_too_far", ScheduledTooFarError],
  ["queue_full", QueueFullError],
  ["unique_conflict", UniqueConflictError],
  ["invalid_argument", InvalidArgumentError],
  ["not_found", NotFoundError],
  ["wrong_state", WrongStateError],
  ["already_exists", AlreadyExistsError],
  ["resource_exhausted", ResourceExhaustedError],
  ["unknown_outcome", UnknownOutcomeError],
  ["unavailable", UnavailableError],
  ["permission_denied", PermissionDeniedError],
  ["unauthenticated", UnauthenticatedError],
  ["internal", InternalError],
];

export function errorKind(e: unknown): string {
  for (const [kind, cls] of kinds) if (e instanceof cls) return kind;
  return "unknown";
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const id = (s: string): number => Number(s);

function jobResult(j: Job): Obj {
  return {
    job_id: id(j.id),
    queue: j.queue,
    job_type: j.jobType,
    payload: text(j.payload),
    state: j.state,
    priority: j.priority,
    attempt: j.attempt,
    max_attempts: j.maxAttempts,
    last_reason: j.lastReason,
    // A deleted parent's state is "unknown" in the suite (the Go client's name).
    parents: j.parents.map((p) => ({ job_id: id(p.jobId), state: p.state === "unspecified" ? "unknown" : p.state, cause: p.state === "dead" ? p.cause : null, ended: p.ended })),
    on_parent_failure: j.onParentFailure ?? null,
    waiting_children: j.waitingChildren.map(id),
    waiting_children_total: j.waitingChildrenTotal,
  };
}

function deadLetterResult(r: DeadLetterRecord): Obj {
  return {
    job_id: id(r.job.id),
    queue: r.job.queue,
    job_type: r.job.jobType,
    payload: text(r.job.payload),
    cause: r.cause,
    final_attempt: r.finalAttempt,
    last_reason: r.lastReason ?? "",
  };
}

function statsResult(q: QueueStats): Obj {
  return { name: q.name, paused: q.paused, scheduled: q.scheduled, ready: q.ready, reserved: q.reserved, dead: q.dead, blocked: q.blocked, tags: Object.keys(q.tags).length > 0 ? { ...q.tags } : null };
}

function settingsResult(s: QueueSettings): Obj {
  const v = <T extends Value>(x: T | undefined): Value => (x === undefined ? null : x);
  return {
    default_priority: v(s.defaultPriority),
    default_max_attempts: v(s.defaultMaxAttempts),
    retry_delay_ms: v(s.retryDelayMs),
    retry_backoff: v(s.retryBackoff),
    retry_delay_max_ms: v(s.retryDelayMaxMs),
    max_schedule_horizon_ms: v(s.maxScheduleHorizonMs),
    max_length: v(s.maxLength),
    dead_letter_queue: v(s.deadLetterQueue),
    tags: s.tags === undefined ? null : { ...s.tags },
  };
}

function actionsResult(rs: ActionResult[]): Obj {
  return { results: rs.map((r) => ({ job_id: id(r.jobId), error: r.error ? errorKind(r.error) : null })) };
}

function taskResult(t: RedriveTask): Obj {
  return {
    id: id(t.id),
    state: t.state,
    queue: t.selection.queue ?? "",
    fresh: t.fresh,
    to_queue: t.toQueue,
    rate: t.rate,
    moved: t.moved,
    remaining: t.remaining,
  };
}

/** Typed reads of a step's arguments. */
class Args {
  constructor(private readonly m: Obj) {}
  has(k: string): boolean {
    return this.m[k] !== undefined && this.m[k] !== null;
  }
  str(k: string): string {
    const v = this.m[k];
    if (v === undefined || v === null) return "";
    if (typeof v !== "string") throw new Mismatch(`argument ${k}: want a string, got ${show(v)}`);
    return v;
  }
  num(k: string): number {
    const v = this.m[k];
    if (v === undefined || v === null) return 0;
    if (typeof v !== "number") throw new Mismatch(`argument ${k}: want a number, got ${show(v)}`);
    return v;
  }
  bool(k: string): boolean {
    const v = this.m[k];
    if (v === undefined || v === null) return false;
    if (typeof v !== "boolean") throw new Mismatch(`argument ${k}: want a bool, got ${show(v)}`);
    return v;
  }
  ids(k: string): string[] {
    const v = this.m[k];
    if (!Array.isArray(v)) throw new Mismatch(`argument ${k}: want an array of job ids, got ${show(v)}`);
    return v.map((x) => String(x));
  }
  strs(k: string): string[] {
    const v = this.m[k];
    return Array.isArray(v) ? v.map((x) => String(x)) : [];
  }
  objs(k: string): Args[] {
    const v = this.m[k];
    if (!Array.isArray(v) || !v.every(isObj)) throw new Mismatch(`argument ${k}: want an array of objects, got ${show(v)}`);
    return v.map((x) => new Args(x as Obj));
  }
  keys(): string[] {
    return Object.keys(this.m);
  }
  sub(k: string): Args {
    const v = this.m[k];
    return new Args(isObj(v) ? v : {});
  }
}

function queueSettings(a: Args): QueueSettings {
  const s: QueueSettings = {};
  if (a.has("default_priority")) s.defaultPriority = a.num("default_priority");
  if (a.has("default_max_attempts")) s.defaultMaxAttempts = a.num("default_max_attempts");
  if (a.has("retry_delay_ms")) s.retryDelayMs = a.num("retry_delay_ms");
  if (a.has("retry_backoff")) s.retryBackoff = a.str("retry_backoff") as "none" | "exponential";
  if (a.has("retry_delay_max_ms")) s.retryDelayMaxMs = a.num("retry_delay_max_ms");
  if (a.has("max_schedule_horizon_ms")) s.maxScheduleHorizonMs = a.num("max_schedule_horizon_ms");
  if (a.has("max_length")) s.maxLength = a.num("max_length");
  if (a.has("dead_letter_queue")) s.deadLetterQueue = a.str("dead_letter_queue");
  if (a.has("tags")) {
    const t = a.sub("tags");
    s.tags = Object.fromEntries(t.keys().map((k) => [k, t.str(k)]));
  }
  return s;
}

const causes: DeadLetterCause[] = ["attempts_exhausted", "rejected", "lease_expired", "admin", "cancelled", "expired"];

function redrive(a: Args): RedriveOptions {
  const o: RedriveOptions = { selection: { queue: a.str("queue"), jobType: a.str("job_type"), reasonContains: a.str("reason_contains") } };
  if (a.has("cause")) {
    const c = a.str("cause") as DeadLetterCause;
    if (!causes.includes(c)) throw new Mismatch(`argument cause: unknown cause ${c}`);
    o.selection!.cause = c;
  }
  if (a.has("to_queue")) o.toQueue = a.str("to_queue");
  if (a.has("fresh")) o.fresh = a.bool("fresh");
  if (a.has("rate")) o.rate = a.num("rate");
  return o;
}

/** enqueue's arguments (also each item of enqueue_batch's jobs). */
function enqueueRequest(a: Args): EnqueueRequest {
  const req: EnqueueRequest = { queue: a.str("queue"), jobType: a.str("job_type"), payload: a.str("payload") };
  if (a.has("priority")) req.priority = a.num("priority");
  if (a.has("delay_ms")) req.scheduledAt = new Date(Date.now() + a.num("delay_ms"));
  if (a.has("max_attempts")) req.maxAttempts = a.num("max_attempts");
  if (a.has("idempotency_key")) req.idempotencyKey = a.str("idempotency_key");
  if (a.has("unique_key")) req.unique = { key: a.str("unique_key"), refuse: a.bool("unique_refuse") };
  if (a.has("ttl_ms")) req.ttlMs = a.num("ttl_ms");
  if (a.has("after")) req.after = a.ids("after").map(Number);
  if (a.has("on_parent_failure")) {
    const p = a.str("on_parent_failure");
    if (p !== "cancel" && p !== "run") throw new Mismatch(`argument on_parent_failure: want cancel or run, got ${p}`);
    req.onParentFailure = p;
  }
  return req;
}

function batchResult(r: BatchResult): Obj {
  return r.ok
    ? { job_id: id(r.result.jobId), state: r.result.state, duplicate: r.result.duplicate, error: null }
    : { job_id: null, state: null, duplicate: null, error: errorKind(r.error) };
}

/** A schedule's stable part: no fire times or counters, which depend on the clock. */
function scheduleResult(s: Schedule): Obj {
  return {
    name: s.name,
    paused: s.paused,
    queue: s.template.queue,
    job_type: s.template.jobType,
    payload: text(s.template.payload),
    cron: s.cron,
    interval_ms: s.intervalMs,
    time_zone: s.timeZone,
  };
}

/** Runs steps with SeppClient; keeps each reserved job's last delivery for
 * ack, nack, release and extend_lease. */
class Driver {
  private readonly deliveries = new Map<number, Delivery>();
  constructor(private readonly c: SeppClient) {}

  private delivery(a: Args): Delivery {
    const d = this.deliveries.get(a.num("job_id"));
    if (!d) throw new Mismatch(`job ${a.num("job_id")} was never reserved in this scenario`);
    return d;
  }

  async call(op: string, m: Obj): Promise<Obj> {
    try {
      return await this.dispatch(op, new Args(m));
    } catch (e) {
      if (e instanceof SeppError) throw new StepError(errorKind(e), e instanceof InvalidArgumentError || e instanceof NotFoundError || e instanceof AlreadyExistsError ? e.field : "", e);
      throw e;
    }
  }

  private async dispatch(op: string, a: Args): Promise<Obj> {
    const c = this.c;
    switch (op) {
      case "enqueue": {
        const r = await c.enqueue(enqueueRequest(a));
        return { job_id: id(r.jobId), state: r.state, duplicate: r.duplicate };
      }
      case "reserve": {
        const opts: { max: number; workerId: string; leaseMs?: number } = { max: a.num("max") || 1, workerId: "conformance" };
        if (a.has("lease_ms")) opts.leaseMs = a.num("lease_ms");
        const ds = await c.reserve(a.str("queue"), opts);
        const jobs: Value[] = [];
        for (const d of ds) {
          this.deliveries.set(id(d.ctx.jobId), d);
          jobs.push({
            job_id: id(d.ctx.jobId),
            queue: d.job.queue,
            job_type: d.job.jobType,
            payload: text(d.job.payload),
            priority: d.job.priority,
            attempt: d.ctx.attempt,
            max_attempts: d.ctx.maxAttempts,
          });
        }
        return { jobs };
      }
      case "ack":
        await c.ack(this.delivery(a).ctx);
        return {};
      case "ack_follow_ups": {
        const rs = await c.ackWithFollowUps(this.delivery(a).ctx, a.objs("follow_ups").map((j) => enqueueRequest(j)));
        return { follow_ups: rs.map((r) => ({ job_id: id(r.jobId), state: r.state, duplicate: r.duplicate })) };
      }
      case "nack": {
        const d = this.delivery(a);
        let dir: RetryDirective;
        switch (a.str("directive") || "default") {
          case "default":
            dir = RetryDirective.default();
            break;
          case "after":
            dir = RetryDirective.after(a.num("delay_ms"));
            break;
          case "dead_letter":
            dir = RetryDirective.deadLetter();
            break;
          default:
            throw new Mismatch(`argument directive: unknown directive ${a.str("directive")}`);
        }
        return { dead_lettered: await c.nack(d.ctx, dir, a.str("reason")) };
      }
      case "release":
        await c.release(this.delivery(a).ctx);
        return {};
      case "extend_lease":
        await c.extendLease(this.delivery(a).ctx, a.num("lease_ms"));
        return {};
      case "get_job":
        return jobResult(await c.getJob(String(a.num("job_id"))));
      case "list_jobs": {
        const { jobs } = await c.listJobs(a.str("queue"), a.str("state") as JobState);
        return { jobs: jobs.map(jobResult) };
      }
      case "set_jobs_priority":
        return actionsResult(await c.setJobsPriority(a.ids("job_ids"), a.num("priority")));
      case "run_jobs_now":
        return actionsResult(await c.runJobsNow(a.ids("job_ids")));
      case "delete_jobs":
        return actionsResult(await c.deleteJobs(a.ids("job_ids")));
      case "reschedule_jobs":
        return actionsResult(await c.rescheduleJobs(a.ids("job_ids"), new Date(Date.now() + a.num("delay_ms"))));
      case "cancel_jobs":
        return actionsResult(await c.cancelJobs(a.ids("job_ids"), { delete: a.bool("delete"), reason: a.str("reason") }));
      case "dead_letter_jobs":
        return actionsResult(await c.deadLetterJobs(a.ids("job_ids"), a.str("reason")));
      case "requeue_dead_letters":
        return actionsResult(await c.requeueDeadLetters(a.ids("job_ids")));
      case "delete_dead_letters":
        return actionsResult(await c.deleteDeadLetters(a.ids("job_ids")));
      case "list_dead_letters": {
        const { records } = await c.listDeadLetters(a.str("queue"));
        return { records: records.map(deadLetterResult) };
      }
      case "get_dead_letter":
        return deadLetterResult(await c.getDeadLetter(String(a.num("job_id"))));
      case "create_queue":
        return { effective: settingsResult(await c.createQueue(a.str("name"), queueSettings(a.sub("settings")), { paused: a.bool("paused") })) };
      case "update_queue": {
        const u: { settings: QueueSettings; inherit: string[]; paused?: boolean } = { settings: queueSettings(a.sub("settings")), inherit: a.strs("inherit") };
        if (a.has("paused")) u.paused = a.bool("paused");
        return { effective: settingsResult(await c.updateQueue(a.str("name"), u)) };
      }
      case "get_queue": {
        const q = await c.getQueue(a.str("name"));
        return { ...statsResult(q.stats), settings: settingsResult(q.settings), effective: settingsResult(q.effective) };
      }
      case "list_queues": {
        const prefix = a.str("name_prefix");
        const qs = (await c.listQueuesByTag(a.strs("tag"))).filter((q) => q.name.startsWith(prefix)).sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
        return { queues: qs.map(statsResult) };
      }
      case "delete_queue": {
        const r = await c.deleteQueue(a.str("name"), a.bool("force"));
        return { jobs_removed: r.jobs, dead_letters_removed: r.deadLetters };
      }
      case "purge_queue": {
        const t = a.str("target");
        if (t !== "waiting" && t !== "dead_letters") throw new Mismatch(`argument target: want waiting or dead_letters, got ${t}`);
        const r = await c.purgeQueue(a.str("name"), t);
        return { jobs_removed: r.jobs, dead_letters_removed: r.deadLetters };
      }
      case "pause_queue":
        await c.pauseQueue(a.str("queue"));
        return {};
      case "resume_queue":
        await c.resumeQueue(a.str("queue"));
        return {};
      case "preview_redrive":
        return { matching: (await c.previewRedrive(redrive(a))).matching };
      case "start_redrive":
        return taskResult(await c.startRedrive(redrive(a)));
      case "get_redrive":
        return taskResult(await c.getRedrive(String(a.num("id"))));
      case "list_redrives": {
        const queue = a.str("queue");
        const tasks = (await c.listRedrives()).filter((t) => (t.selection.queue ?? "") === queue).sort((x, y) => id(x.id) - id(y.id));
        return { tasks: tasks.map(taskResult) };
      }
      case "pause_redrive":
        return taskResult(await c.pauseRedrive(String(a.num("id"))));
      case "resume_redrive":
        return taskResult(await c.resumeRedrive(String(a.num("id"))));
      case "cancel_redrive":
        return taskResult(await c.cancelRedrive(String(a.num("id"))));
      case "enqueue_batch": {
        const jobs = a.objs("jobs").map((j) => enqueueRequest(j));
        return { results: (await c.enqueueBatch(jobs)).map(batchResult) };
      }
      case "ack_batch": {
        const ids = a.ids("job_ids");
        const ds = ids.map((i) => this.delivery(new Args({ job_id: id(i) })));
        const errs = await c.ackBatch(ds.map((d) => d.ctx));
        return { results: errs.map((e, i) => ({ job_id: id(ids[i]!), error: e ? errorKind(e) : null })) };
      }
      case "drain_dead_letters": {
        const records = await c.drainDeadLetters(a.has("queue") ? a.str("queue") : undefined, a.num("max"));
        return { records: records.map(deadLetterResult) };
      }
      case "create_schedule": {
        const def: ScheduleDefinition = {
          name: a.str("name"),
          template: { queue: a.str("queue"), jobType: a.str("job_type"), payload: a.str("payload") },
          paused: a.bool("paused"),
        };
        if (a.has("cron")) def.cron = a.str("cron");
        if (a.has("interval_ms")) def.intervalMs = a.num("interval_ms");
        if (a.has("time_zone")) def.timeZone = a.str("time_zone");
        return scheduleResult(await c.createSchedule(def));
      }
      case "get_schedule":
        return scheduleResult(await c.getSchedule(a.str("name")));
      case "pause_schedule":
        return scheduleResult(await c.pauseSchedule(a.str("name")));
      case "resume_schedule":
        return scheduleResult(await c.resumeSchedule(a.str("name")));
      case "delete_schedule":
        await c.deleteSchedule(a.str("name"));
        return {};
      case "list_schedules": {
        const prefix = a.str("name_prefix");
        const ss = (await c.listSchedules()).filter((s) => s.name.startsWith(prefix)).sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
        return { schedules: ss.map(scheduleResult) };
      }
    }
    throw new Mismatch(`unknown op ${JSON.stringify(op)}`);
  }
}

async function attempt(d: Driver, st: Step, args: Obj, expect: Value | undefined, expectErr: { kind: string; field?: string } | undefined): Promise<Obj> {
  let result: Obj;
  try {
    result = await d.call(st.op, args);
  } catch (e) {
    if (!(e instanceof StepError)) throw e;
    if (!expectErr) throw new Mismatch(`unexpected error: ${e.message}`);
    if (e.kind !== expectErr.kind) throw new Mismatch(`expected error ${expectErr.kind}, got ${e.message}`);
    if (expectErr.field && e.field !== expectErr.field) throw new Mismatch(`expected error ${expectErr.kind} naming field ${JSON.stringify(expectErr.field)}, got ${e.message}`);
    return {};
  }
  if (expectErr) throw new Mismatch(`expected error ${expectErr.kind}, got result ${show(result)}`);
  if (expect !== undefined && expect !== null) match("result", expect, result);
  return result;
}

async function runStep(d: Driver, st: Step, vars: Map<string, Value>): Promise<void> {
  if (st.expect !== undefined && st.expect !== null && st.error) throw new Mismatch("a step expects a result or an error, not both");
  const args = substitute(st.args, vars) as Obj;
  const expect = substitute(st.expect, vars);
  let expectErr: { kind: string; field?: string } | undefined;
  if (st.error) {
    expectErr = { kind: substitute(st.error.kind, vars) as string };
    if (st.error.field !== undefined) expectErr.field = substitute(st.error.field, vars) as string;
  }
  const deadline = Date.now() + st.within_ms;
  for (;;) {
    let result: Obj;
    try {
      result = await attempt(d, st, args, expect, expectErr);
    } catch (e) {
      if (!(e instanceof Mismatch) || st.within_ms === 0) throw e;
      if (Date.now() > deadline) throw new Mismatch(`not within ${st.within_ms} ms: ${e.message}`);
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    for (const [name, path] of Object.entries(st.save)) vars.set(name, lookup(result, path));
    return;
  }
}

/** Runs the steps in order; rejects with a Mismatch naming the first that fails. */
export async function runScenario(client: SeppClient, sc: Scenario, run: string): Promise<void> {
  const d = new Driver(client);
  const vars = new Map<string, Value>([["run", run]]);
  for (const [i, st] of sc.steps.entries()) {
    try {
      await runStep(d, st, vars);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new Mismatch(`step ${i + 1} (${st.op}): ${msg}`);
    }
  }
}
