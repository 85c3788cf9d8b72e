// Testing code that uses sepp with startServer (sepp/testing): each test
// file gets a real single-node server, on free ports in a temporary
// folder, stopped after its tests. This file imports the package by name,
// as a project of yours would, and is self-contained: `make
// check-packages` compiles and runs it, as it stands, in a fresh npm
// project that installed the package's tarball.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { SeppClient, RetryDirective, Worker, permanent } from "sepp";
import type { DeadLetterRecord, Delivery } from "sepp";
import { startServer, TestServer } from "sepp/testing";

/** Code under test: it enqueues a job. */
async function sendWelcome(client: SeppClient, address: string): Promise<string> {
  const r = await client.enqueue({ queue: "emails", jobType: "welcome", payload: address });
  return r.jobId;
}

let server: TestServer;
let client: SeppClient;

before(
  async () => {
    server = await startServer({
      config: `
[storage]
dead_letter_retention_ms = 3600000

[[queues]]
name = "emails"
default_max_attempts = 2
`,
    });
    client = await server.connect();
  },
  { timeout: 60_000 },
);

after(async () => {
  client?.close();
  await server?.stop();
});

test("sendWelcome enqueues a job", async () => {
  const id = await sendWelcome(client, "ada@example.com");
  const [d] = await client.reserve("emails", { waitMs: 5_000 });
  assert.ok(d, "a job to reserve");
  assert.equal(d.ctx.jobId, id);
  assert.equal(new TextDecoder().decode(d.job.payload), "ada@example.com");
  // The queue's config reached the server: two attempts, not three.
  assert.equal(d.ctx.maxAttempts, 2);
  await client.ack(d.ctx);
});

test("a job that fails twice ends in the dead letters", async () => {
  const id = await sendWelcome(client, "");
  let dead = false;
  for (let i = 0; i < 2; i++) {
    const [d] = await client.reserve("emails", { waitMs: 5_000 });
    assert.ok(d, `attempt ${i + 1} to reserve`);
    dead = await client.nack(d.ctx, RetryDirective.default(), "no address");
  }
  assert.ok(dead, "the second nack dead-lettered the job");
  const [record] = await client.drainDeadLetters("emails", 10);
  assert.equal(record?.jobId, id);
  assert.equal(record?.lastReason, "no address");
});

/** A handler under test: a job without an address cannot succeed. */
function welcome(d: Delivery): void {
  if (d.job.payload.length === 0) throw permanent(new Error("no address"));
}

test("a worker acks good jobs and dead-letters bad ones", async () => {
  await sendWelcome(client, "ada@example.com");
  const bad = await sendWelcome(client, "");
  const worker = new Worker(client, { concurrency: 2, waitMs: 200 });
  worker.handle("emails", "welcome", welcome);
  worker.start();
  const records: DeadLetterRecord[] = [];
  try {
    for (let i = 0; i < 100 && records.length === 0; i++) {
      records.push(...(await client.drainDeadLetters("emails", 10)));
      if (records.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await worker.stop();
  }
  assert.deepEqual(
    records.map((r) => [r.jobId, r.lastReason]),
    [[bad, "no address"]],
  );
});
