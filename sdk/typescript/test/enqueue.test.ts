// The generated write side of a job (src/gen/enqueue.ts, from
// sepp.v1.EnqueueRequest) and the client's wrapper of it: every proto
// field filled through the native type, the whole wire message checked.
// No server needed.
//
// The request is a Required<EnqueueRequest> and the expected wire message
// a Required<EnqueueRequestJSON>: a field added to the proto, or to the
// generated types, does not compile here until the test fills and checks
// it.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { EnqueueRequestJSON, UniqueOptionsJSON } from "../src/gen/sepp/v1/queue_service_json.js";
import type { TraceContextJSON } from "../src/gen/sepp/v1/types_json.js";
import { enqueueToJSON } from "../src/client.js";
import type { EnqueueRequest, TraceContext, UniqueOptions } from "../src/types.js";

const unique: Required<UniqueOptions> = {
  key: "k-1",
  fields: ["tenant", "region"],
  coverDead: true,
  completedForMs: 60_000.7,
  refuse: true,
};

const traceContext: Required<TraceContext> = {
  traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  tracestate: "vendor=x",
};

const request: Required<EnqueueRequest> = {
  queue: "q",
  jobType: "email",
  payload: "hi",
  priority: 7,
  scheduledAt: new Date("2026-01-02T03:04:05.000Z"),
  maxAttempts: 4,
  custom: { tenant: "acme" },
  idempotencyKey: "the caller's, which the client passes on as key",
  unique,
  expiresAt: new Date("2026-01-03T00:00:00.000Z"),
  ttlMs: 1500.9,
  traceContext,
  after: [0, 2],
  onParentFailure: "run",
};

const uniqueJSON: Required<UniqueOptionsJSON> = {
  key: "k-1",
  fields: ["tenant", "region"],
  coverDead: true,
  completedForMs: "60000",
  refuse: true,
};

const traceContextJSON: Required<TraceContextJSON> = {
  traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  tracestate: "vendor=x",
};

const wire: Required<EnqueueRequestJSON> = {
  queue: "q",
  jobType: "email",
  payload: btoa("hi"),
  priority: 7,
  scheduledAt: "2026-01-02T03:04:05.000Z",
  maxAttempts: 4,
  custom: { tenant: "acme" },
  idempotencyKey: "key-1",
  unique: uniqueJSON,
  expiresAt: "2026-01-03T00:00:00.000Z",
  ttlMs: "1500",
  traceContext: traceContextJSON,
  after: [0, 2],
  onParentFailure: "PARENT_FAILURE_POLICY_RUN",
};

test("enqueueToJSON writes every field of EnqueueRequest", () => {
  assert.deepEqual(enqueueToJSON(request, "key-1"), wire);
});

test("enqueueToJSON leaves unset fields out, and takes bytes as the payload", () => {
  assert.deepEqual(enqueueToJSON({ queue: "q", jobType: "t" }, "k"), { queue: "q", jobType: "t", idempotencyKey: "k" });
  const m = enqueueToJSON({ queue: "q", jobType: "t", payload: new Uint8Array([1, 2]), priority: 0, onParentFailure: "cancel", unique: {} }, "k");
  assert.deepEqual(m, {
    queue: "q",
    jobType: "t",
    idempotencyKey: "k",
    payload: "AQI=",
    priority: 0,
    unique: {},
    onParentFailure: "PARENT_FAILURE_POLICY_CANCEL",
  });
});
