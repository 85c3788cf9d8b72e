// The generated read side of a job (src/gen/job.ts, from sepp.v1.Job):
// every proto field filled, every native field checked. No server needed.
//
// The wire literals are Required<...JSON> and the expected values
// Required<...> of the native types: a field added to the proto, or to the
// generated types, does not compile here until the test fills and checks it.
import { test } from "node:test";
import assert from "node:assert/strict";
import type {
  DeadLetterCauseJSON,
  JobAttemptJSON,
  JobJSON,
  JobOriginJSON,
  JobParentJSON,
  JobStateJSON,
  ParentFailurePolicyJSON,
  ProgressJSON,
  TraceContextJSON,
} from "../src/gen/sepp/v1/types_json.js";
import { deadLetterCauseFromJSON, jobFromJSON, jobStateFromJSON, parentFailurePolicyFromJSON } from "../src/types.js";
import type { DeadLetterCause, Job, JobAttempt, JobOrigin, JobParent, JobState, ParentFailurePolicy, Progress, TraceContext } from "../src/types.js";

const b64 = (s: string): string => btoa(s);
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

const attemptJSON: Required<JobAttemptJSON> = {
  attempt: 2,
  workerId: "w-a",
  endedAt: "2026-01-02T03:04:06Z",
  outcome: "nack",
  reason: "boom",
  startedAt: "2026-01-02T03:04:05Z",
  duration: "1.500s",
  leaseToken: "18446744073709551615",
  directive: "after",
};
const attempt: Required<JobAttempt> = {
  attempt: 2,
  workerId: "w-a",
  endedAt: new Date("2026-01-02T03:04:06Z"),
  outcome: "nack",
  reason: "boom",
  startedAt: new Date("2026-01-02T03:04:05Z"),
  durationMs: 1500,
  leaseToken: "18446744073709551615",
  directive: "after",
};

const originJSON: Required<JobOriginJSON> = {
  queue: "src",
  jobId: "9007199254740993",
  cause: "DEAD_LETTER_CAUSE_LEASE_EXPIRED",
  failedAt: "2026-01-02T03:04:07Z",
  lastReason: "late",
  finalAttempt: 3,
};
const origin: Required<JobOrigin> = {
  queue: "src",
  jobId: "9007199254740993",
  cause: "lease_expired",
  failedAt: new Date("2026-01-02T03:04:07Z"),
  lastReason: "late",
  finalAttempt: 3,
};

const traceJSON: Required<TraceContextJSON> = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "congo=t61rcWkgMzE" };
const trace: Required<TraceContext> = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "congo=t61rcWkgMzE" };

const progressJSON: Required<ProgressJSON> = { percent: 42, message: "half" };
const progress: Required<Progress> = { percent: 42, message: "half" };

const parentJSON: Required<JobParentJSON> = {
  jobId: "7",
  state: "JOB_STATE_COMPLETED",
  cause: "DEAD_LETTER_CAUSE_ADMIN",
  ended: true,
  resultKept: true,
  result: b64("parent"),
  resultOmitted: true,
};
const parent: Required<JobParent> = {
  jobId: "7",
  state: "completed",
  cause: "admin",
  ended: true,
  resultKept: true,
  result: bytes("parent"),
  resultOmitted: true,
};

const jobJSON: Required<JobJSON> = {
  id: "9007199254740995",
  queue: "q",
  jobType: "t",
  payload: b64("payload"),
  priority: 7,
  state: "JOB_STATE_RESERVED",
  enqueuedAt: "2026-01-02T03:04:00Z",
  scheduledAt: "2026-01-02T03:04:01Z",
  nextAttemptAt: "2026-01-02T03:04:02Z",
  attempt: 3,
  maxAttempts: 5,
  custom: { a: "1", b: "2" },
  workerId: "w-1",
  leaseDeadline: "2026-01-02T03:04:03Z",
  lastReason: "boom",
  history: [attemptJSON],
  startedAt: "2026-01-02T03:04:04Z",
  origin: originJSON,
  expiresAt: "2026-01-02T03:05:00Z",
  traceContext: traceJSON,
  result: b64("result"),
  completedAt: "2026-01-02T03:04:08Z",
  runTime: "2.250s",
  progress: progressJSON,
  parents: [parentJSON],
  onParentFailure: "PARENT_FAILURE_POLICY_RUN",
  waitingChildren: ["11", "18446744073709551614"],
  waitingChildrenTotal: 101,
};
const job: Required<Job> = {
  id: "9007199254740995",
  queue: "q",
  jobType: "t",
  payload: bytes("payload"),
  priority: 7,
  state: "reserved",
  enqueuedAt: new Date("2026-01-02T03:04:00Z"),
  scheduledAt: new Date("2026-01-02T03:04:01Z"),
  nextAttemptAt: new Date("2026-01-02T03:04:02Z"),
  attempt: 3,
  maxAttempts: 5,
  custom: { a: "1", b: "2" },
  workerId: "w-1",
  leaseDeadline: new Date("2026-01-02T03:04:03Z"),
  lastReason: "boom",
  history: [attempt],
  startedAt: new Date("2026-01-02T03:04:04Z"),
  origin,
  expiresAt: new Date("2026-01-02T03:05:00Z"),
  traceContext: trace,
  result: bytes("result"),
  completedAt: new Date("2026-01-02T03:04:08Z"),
  runTimeMs: 2250,
  progress,
  parents: [parent],
  onParentFailure: "run",
  waitingChildren: ["11", "18446744073709551614"],
  waitingChildrenTotal: 101,
};

test("jobFromJSON: every field of sepp.v1.Job and the messages it embeds", () => {
  assert.deepEqual(jobFromJSON(jobJSON), job);
});

test("jobFromJSON: an empty job has its zero values, and no optional field", () => {
  const empty: Job = {
    id: "0",
    queue: "",
    jobType: "",
    payload: new Uint8Array(),
    priority: 0,
    state: "unspecified",
    attempt: 0,
    maxAttempts: 0,
    custom: {},
    workerId: "",
    lastReason: "",
    history: [],
    result: new Uint8Array(),
    parents: [],
    waitingChildren: [],
    waitingChildrenTotal: 0,
  };
  assert.deepEqual(jobFromJSON({}), empty);
  assert.deepEqual(jobFromJSON(null), jobFromJSON({}));
});

test("jobFromJSON: onParentFailure is set exactly with parents; an empty tracestate is absent", () => {
  const j = jobFromJSON({ parents: [{ jobId: "1" }], traceContext: { traceparent: "tp", tracestate: "" } });
  assert.equal(j.onParentFailure, "cancel");
  assert.deepEqual(j.traceContext, { traceparent: "tp" });
  assert.equal("onParentFailure" in jobFromJSON({ onParentFailure: "PARENT_FAILURE_POLICY_RUN" }), false);
});

test("the enum decoders: every value, 0, a number and an unknown value", () => {
  const states: Record<JobStateJSON, JobState> = {
    JOB_STATE_UNSPECIFIED: "unspecified",
    JOB_STATE_SCHEDULED: "scheduled",
    JOB_STATE_READY: "ready",
    JOB_STATE_RESERVED: "reserved",
    JOB_STATE_DEAD: "dead",
    JOB_STATE_COMPLETED: "completed",
    JOB_STATE_BLOCKED: "blocked",
  };
  let n = 0;
  for (const [wire, native] of Object.entries(states)) {
    assert.equal(jobStateFromJSON(wire as JobStateJSON), native);
    assert.equal(jobStateFromJSON(n++), native, `number of ${wire}`);
  }
  assert.equal(jobStateFromJSON(99), "unspecified");

  const causes: Record<DeadLetterCauseJSON, DeadLetterCause> = {
    DEAD_LETTER_CAUSE_UNSPECIFIED: "unspecified",
    DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED: "attempts_exhausted",
    DEAD_LETTER_CAUSE_REJECTED: "rejected",
    DEAD_LETTER_CAUSE_LEASE_EXPIRED: "lease_expired",
    DEAD_LETTER_CAUSE_ADMIN: "admin",
    DEAD_LETTER_CAUSE_CANCELLED: "cancelled",
    DEAD_LETTER_CAUSE_EXPIRED: "expired",
  };
  n = 0;
  for (const [wire, native] of Object.entries(causes)) {
    assert.equal(deadLetterCauseFromJSON(wire as DeadLetterCauseJSON), native);
    assert.equal(deadLetterCauseFromJSON(n++), native, `number of ${wire}`);
  }
  assert.equal(deadLetterCauseFromJSON(99), "unspecified");

  // Value 0 has no native name: unset, as on a job without parents.
  const policies: Record<ParentFailurePolicyJSON, ParentFailurePolicy | undefined> = {
    PARENT_FAILURE_POLICY_UNSPECIFIED: undefined,
    PARENT_FAILURE_POLICY_CANCEL: "cancel",
    PARENT_FAILURE_POLICY_RUN: "run",
  };
  n = 0;
  for (const [wire, native] of Object.entries(policies)) {
    assert.equal(parentFailurePolicyFromJSON(wire as ParentFailurePolicyJSON), native);
    assert.equal(parentFailurePolicyFromJSON(n++), native, `number of ${wire}`);
  }
  assert.equal(parentFailurePolicyFromJSON(undefined), undefined);
  assert.equal(parentFailurePolicyFromJSON(99), "cancel");
});
