// The SDK conformance suite (conformance/scenarios at the repository's
// root), run with SeppClient against a local three-node sepp dev cluster;
// and the runner's self-test: a scenario that expects the wrong thing fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { useCluster } from "./cluster.js";
import { SeppClient } from "../src/index.js";
import { loadScenarios, Mismatch, parseScenario, runScenario } from "./conformance.js";

let client: SeppClient;

useCluster((_, cl) => {
  client = cl;
});

const scenarios = loadScenarios();
const unique = (name: string) => `ts-${name}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

test("there are scenarios", () => {
  assert.ok(scenarios.size >= 15, `only ${scenarios.size} scenarios`);
});

for (const [name, sc] of scenarios) {
  test(`scenario ${name}`, { timeout: 60_000 }, async () => {
    try {
      await runScenario(client, sc, unique(name));
    } catch (e) {
      if (e instanceof Mismatch) assert.fail(`${sc.description}: ${e.message}`);
      throw e;
    }
  });
}

const bad: [string, string, string][] = [
  [
    "wrong result field",
    `[{"op": "enqueue", "args": {"queue": "\${run}-q", "job_type": "t"}},
      {"op": "reserve", "args": {"queue": "\${run}-q"}, "expect": {"jobs": [{"job_type": "not-t"}]}}]`,
    `step 2 (reserve): result.jobs[0].job_type: expected "not-t", got "t"`,
  ],
  [
    "wrong length",
    `[{"op": "reserve", "args": {"queue": "\${run}-q"}, "expect": {"jobs": [{"job_type": "t"}]}}]`,
    "step 1 (reserve): result.jobs: expected 1 elements, got 0",
  ],
  [
    "error that does not come",
    `[{"op": "create_queue", "args": {"name": "\${run}-q"}, "error": {"kind": "already_exists"}}]`,
    "step 1 (create_queue): expected error already_exists, got result",
  ],
  [
    "other error",
    `[{"op": "get_job", "args": {"job_id": 999999999}, "error": {"kind": "wrong_state"}}]`,
    "step 1 (get_job): expected error wrong_state, got not_found",
  ],
  ["unexpected error", `[{"op": "get_job", "args": {"job_id": 999999999}}]`, "step 1 (get_job): unexpected error: not_found"],
  [
    "not within",
    `[{"op": "reserve", "args": {"queue": "\${run}-q"}, "within_ms": 300, "expect": {"jobs": [{"job_type": "t"}]}}]`,
    "step 1 (reserve): not within 300 ms: result.jobs: expected 1 elements, got 0",
  ],
  ["unknown op", `[{"op": "enqueue_many", "args": {}}]`, `step 1 (enqueue_many): unknown op "enqueue_many"`],
  ["unknown variable", `[{"op": "get_job", "args": {"job_id": "\${nothing}"}}]`, "step 1 (get_job): unknown variable ${nothing}"],
];

for (const [name, steps, want] of bad) {
  test(`the runner reports a mismatch: ${name}`, async () => {
    const sc = parseScenario(`{"description": "bad", "steps": ${steps}}`);
    await assert.rejects(runScenario(client, sc, unique("bad")), (e: unknown) => {
      assert.ok(e instanceof Mismatch, `not a Mismatch: ${String(e)}`);
      assert.ok(e.message.startsWith(want), `got  ${e.message}\nwant ${want}...`);
      return true;
    });
  });
}
