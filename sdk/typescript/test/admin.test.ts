// The operator calls' values and their protojson forms, without a server
// (the conformance suite runs the calls themselves against a cluster).
import { test } from "node:test";
import assert from "node:assert/strict";
import { queueLimitsFromJSON, queueSettingsFields, queueSettingsFromJSON, queueSettingsToJSON, redriveTaskFromJSON, redriveToJSON } from "../src/admin.js";

test("queue settings round trip and keep what is unset unset", () => {
  const s = { defaultPriority: 0, retryDelayMs: 1500, retryBackoff: "exponential" as const, maxLength: 0, deadLetterQueue: "", ratePeriodMs: 2000 };
  const m = queueSettingsToJSON(s);
  // Zero and "" are values, sent as set (an update to 0 or "" drops a limit); 64-bit numbers are strings.
  assert.deepEqual(m, { defaultPriority: 0, retryBackoff: "RETRY_BACKOFF_EXPONENTIAL", deadLetterQueue: "", retryDelayMs: "1500", maxLength: "0", ratePeriodMs: "2000" });
  assert.deepEqual(queueSettingsFromJSON(m), s);
});

test("queue settings carry every field of the wire type, both ways", () => {
  // The keys come from queueSettingsFields, which does not compile unless it
  // names every field of the generated QueueSettingsJSON: a setting added to
  // the proto is covered here with no edit. Reading {} gives each its zero
  // value (0, "", the enum's first name, no tags), all valid to send.
  const keys = Object.keys(queueSettingsFields).sort();
  const s = queueSettingsFromJSON(Object.fromEntries(keys.map((k) => [k, {}])));
  assert.deepEqual(Object.keys(s).sort(), keys);
  const m = queueSettingsToJSON(s);
  assert.deepEqual(Object.keys(m).sort(), keys);
  assert.deepEqual(queueSettingsFromJSON(m), s);
});

test("queue settings refuse what the wire cannot carry", () => {
  assert.throws(() => queueSettingsToJSON({ maxLength: 1.5 }), RangeError);
  assert.throws(() => queueSettingsToJSON({ retryDelayMs: -1 }), RangeError);
  assert.throws(() => queueSettingsToJSON({ retryBackoff: "linear" as "none" }), RangeError);
});

test("effective settings are all set", () => {
  const e = queueLimitsFromJSON({ defaultMaxAttempts: 3, retryDelayMs: "250" });
  assert.equal(e.defaultMaxAttempts, 3);
  assert.equal(e.retryDelayMs, 250);
  assert.equal(e.retryBackoff, "none");
  assert.equal(e.maxLength, 0);
  assert.equal(e.deadLetterQueue, "");
});

test("a redrive's selection goes out and comes back", () => {
  const after = new Date("2026-12-01T00:00:00Z");
  const m = redriveToJSON({ selection: { queue: "q", cause: "admin", failedAfter: after }, toQueue: "r", fresh: true, rate: 50 });
  assert.deepEqual(m, { selection: { queue: "q", cause: "DEAD_LETTER_CAUSE_ADMIN", failedAfter: after.toISOString() }, toQueue: "r", fresh: true, rate: 50 });
  const t = redriveTaskFromJSON({ id: "7", ...m, state: "REDRIVE_STATE_DONE", moved: "2" });
  assert.deepEqual(t.selection, { queue: "q", cause: "admin", failedAfter: after });
  assert.equal(t.id, "7");
  assert.equal(t.state, "done");
  assert.equal(t.moved, 2);
});
