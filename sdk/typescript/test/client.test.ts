// The client and the Worker against a real three-node cluster (sepp dev),
// one behaviour per test; each test has queues of its own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DevCluster, post, waitFor, useCluster } from "./cluster.js";
import { jobFromJSON } from "../src/types.js";
import {
  SeppClient,
  Priority,
  RetryDirective,
  Worker,
  retry,
  retryAfter,
  permanent,
  InvalidArgumentError,
  ScheduledTooFarError,
  NotFoundError,
  WrongStateError,
  AlreadyExistsError,
  LeaseLostError,
  JobCancelledError,
  UnknownOutcomeError,
  CanceledError,
  ClosedError,
  UnavailableError,
  SeppError,
  Job,
  JobParent,
} from "../src/index.js";

let cluster: DevCluster;
let client: SeppClient;

useCluster((c, cl) => {
  cluster = c;
  client = cl;
});

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** A fetch that counts calls per method and can drop answers: the request
 * reaches the server, its response is thrown away, as a connection cut
 * after the send would. */
function faultyFetch(drop: (method: string, n: number) => boolean, refuse: (method: string) => boolean = () => false) {
  const calls = new Map<string, number>();
  const f = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = String(input);
    const method = url.slice(url.lastIndexOf("/") + 1);
    const n = (calls.get(method) ?? 0) + 1;
    calls.set(method, n);
    if (refuse(method)) throw Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } });
    const resp = await fetch(input, init);
    if (drop(method, n)) {
      await resp.text();
      throw Object.assign(new TypeError("fetch failed"), { cause: { code: "UND_ERR_SOCKET" } });
    }
    return resp;
  };
  return { fetch: f as typeof fetch, calls };
}

test("connect takes several addresses, skips a dead one and finds the leader", async () => {
  const leader = cluster.nodes[await cluster.leaderIndex()]!;
  // Nothing listens on 127.0.0.1:3: the client moves on to the next node.
  const c = await SeppClient.connect(["127.0.0.1:3", ...cluster.nodes.map((n) => n.addr)].join(","));
  try {
    const info = await c.serverInfo();
    assert.equal(info.leaderAddr, leader.addr);
    assert.equal(c.leaderAddr, leader.url);
    assert.ok(info.deadLetterRetentionEnabled, "the test cluster keeps dead letters");
    assert.ok(info.maxScheduleHorizonMs > 0);
  } finally {
    c.close();
  }
  await assert.rejects(SeppClient.connect([]), InvalidArgumentError);
});

test("a client given only a follower is served through it, then goes to the leader", async () => {
  const li = await cluster.leaderIndex();
  const follower = cluster.nodes[(li + 1) % cluster.nodes.length]!;
  const c = await SeppClient.connect(follower.url);
  try {
    // connect asked the follower, which named the leader.
    assert.equal(c.leaderAddr, cluster.nodes[li]!.url);
    const r = await c.enqueue({ queue: "follow", jobType: "t" });
    assert.match(r.jobId, /^[1-9][0-9]*$/);
  } finally {
    c.close();
  }
});

test("enqueue, reserve and ack: the JSON mapping round-trips", async () => {
  const scheduled = new Date(Date.now() - 1000);
  const r = await client.enqueue({
    queue: "life",
    jobType: "password_reset",
    payload: '{"user":42}',
    priority: Priority.P7,
    maxAttempts: 4,
    custom: { tenant: "acme" },
    scheduledAt: scheduled,
  });
  assert.equal(typeof r.jobId, "string");
  assert.equal(r.state, "ready");
  assert.equal(r.duplicate, false);
  assert.match(r.idempotencyKey, /^[0-9a-f]{32}$/);

  const [d, ...rest] = await client.reserve("life", { workerId: "ts-test", max: 5, leaseMs: 20_000 });
  assert.equal(rest.length, 0);
  assert.ok(d);
  assert.equal(d.ctx.jobId, r.jobId);
  assert.equal(d.ctx.attempt, 1);
  assert.equal(d.ctx.maxAttempts, 4);
  assert.equal(d.ctx.workerId, "ts-test");
  assert.ok(d.ctx.leaseDeadline instanceof Date);
  const leaseLeft = d.ctx.leaseDeadline.getTime() - Date.now();
  assert.ok(leaseLeft > 10_000 && leaseLeft <= 21_000, `lease ${leaseLeft} ms, want about 20 s`);
  assert.equal(text(d.job.payload), '{"user":42}');
  assert.equal(d.job.priority, 7);
  assert.equal(d.job.jobType, "password_reset");
  assert.deepEqual(d.job.custom, { tenant: "acme" });
  assert.equal(d.job.state, "reserved");
  assert.ok(d.job.enqueuedAt instanceof Date);

  await client.ack(d.ctx);
  await assert.rejects(client.getJob(r.jobId), NotFoundError);
  // The lease is spent: a second ack is refused, typed.
  await assert.rejects(client.ack(d.ctx), LeaseLostError);
});

test("one idempotency key per logical enqueue: a caller's key is a duplicate, a dropped answer is retried with its key", async () => {
  const a = await client.enqueue({ queue: "idem", jobType: "t", idempotencyKey: "order-17" });
  const b = await client.enqueue({ queue: "idem", jobType: "t", idempotencyKey: "order-17" });
  assert.equal(b.jobId, a.jobId);
  assert.equal(b.duplicate, true);

  // The first Enqueue's answer is lost after the server applied it: the
  // retry carries the same generated key, so one job results, and it is
  // not reported as a duplicate (it is this call's own job).
  const f = faultyFetch((m, n) => m === "Enqueue" && n === 1);
  const c = await SeppClient.connect(cluster.urls, { fetch: f.fetch });
  try {
    const r = await c.enqueue({ queue: "idem-drop", jobType: "t", payload: "once" });
    assert.equal(f.calls.get("Enqueue"), 2, "the dropped enqueue was retried");
    assert.equal(r.duplicate, false);
    const ds = await client.reserve("idem-drop", { max: 10 });
    assert.equal(ds.length, 1, "exactly one job for one logical enqueue");
    assert.equal(ds[0]!.ctx.jobId, r.jobId);
    await client.ack(ds[0]!.ctx);
  } finally {
    c.close();
  }
});

test("one request id per reserve: a retried reserve returns the first one's deliveries", async () => {
  await client.enqueueBatch([1, 2, 3].map((i) => ({ queue: "rid", jobType: "t", payload: String(i) })));
  const f = faultyFetch((m, n) => m === "Reserve" && n === 1);
  const c = await SeppClient.connect(cluster.urls, { fetch: f.fetch });
  try {
    const ds = await c.reserve("rid", { max: 2 });
    assert.equal(f.calls.get("Reserve"), 2);
    assert.equal(ds.length, 2, "the retry got the two jobs the lost answer leased");
    // Nothing else was leased: the third job is still there for someone else.
    const rest = await client.reserve("rid", { max: 10 });
    assert.equal(rest.length, 1);
    assert.deepEqual((await client.ackBatch([...ds, ...rest].map((d) => d.ctx))).filter(Boolean), []);
  } finally {
    c.close();
  }
});

test("enqueueBatch: items succeed or fail on their own, in order, with typed errors", async () => {
  const far = new Date(Date.now() + 365 * 24 * 3600 * 1000);
  const res = await client.enqueueBatch([
    { queue: "batch", jobType: "a" },
    { queue: "", jobType: "b" },
    { queue: "batch", jobType: "c", scheduledAt: far },
    { queue: "batch", jobType: "d", priority: Priority.MAX },
  ]);
  assert.equal(res.length, 4);
  assert.ok(res[0]!.ok && res[3]!.ok);
  const bad = res[1]!;
  assert.ok(!bad.ok && bad.error instanceof InvalidArgumentError);
  assert.equal(bad.error.field, "jobs[1].queue");
  const tooFar = res[2]!;
  assert.ok(!tooFar.ok && tooFar.error instanceof ScheduledTooFarError, `item 2: ${!tooFar.ok && tooFar.error}`);
  assert.ok(tooFar.error.horizonMs > 0);
  const ds = await client.reserve("batch", { max: 10 });
  assert.deepEqual(
    ds.map((d) => d.job.jobType),
    ["d", "a"],
  );
  await client.ackBatch(ds.map((d) => d.ctx));
});

test("Priority: P0..P9 with MIN and MAX; higher first, FIFO within a level", async () => {
  assert.equal(Priority.MIN, Priority.P0);
  assert.equal(Priority.MAX, Priority.P9);
  assert.deepEqual(
    [Priority.P0, Priority.P1, Priority.P2, Priority.P3, Priority.P4, Priority.P5, Priority.P6, Priority.P7, Priority.P8, Priority.P9],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
  for (const [p, n] of [
    [Priority.MIN, "low"],
    [Priority.P5, "mid-1"],
    [Priority.MAX, "high"],
    [Priority.P5, "mid-2"],
  ] as const) {
    await client.enqueue({ queue: "prio", jobType: n, priority: p });
  }
  const ds = await client.reserve("prio", { max: 10 });
  assert.deepEqual(
    ds.map((d) => d.job.jobType),
    ["high", "mid-1", "mid-2", "low"],
  );
  await client.ackBatch(ds.map((d) => d.ctx));
  // Out of range is refused before it is sent.
  await assert.rejects(client.enqueue({ queue: "prio", jobType: "t", priority: 10 }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "priority");
});

test("scheduling: a future scheduledAt is held back; beyond the horizon is ScheduledTooFar with both times", async () => {
  const at = new Date(Date.now() + 3600_000);
  const r = await client.enqueue({ queue: "sched", jobType: "t", scheduledAt: at });
  assert.equal(r.state, "scheduled");
  const j = await client.getJob(r.jobId);
  assert.equal(j.state, "scheduled");
  assert.equal(j.scheduledAt?.getTime(), at.getTime());
  assert.deepEqual(await client.reserve("sched"), []);

  const far = new Date(Date.now() + 90 * 24 * 3600_000);
  const err = await client.enqueue({ queue: "sched", jobType: "t", scheduledAt: far }).then(
    () => assert.fail("enqueued beyond the horizon"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ScheduledTooFarError, String(err));
  assert.ok(err instanceof InvalidArgumentError, "ScheduledTooFar is also an invalid argument");
  assert.equal(err.code, "invalid_argument");
  assert.equal(err.queue, "sched");
  assert.equal(err.horizonMs, 30 * 24 * 3600_000);
  assert.equal(err.requestedAt?.getTime(), far.getTime());
  assert.ok(err.latestAllowed && err.latestAllowed.getTime() < far.getTime());
  assert.ok(err.details.some((d) => d.type === "sepp.v1.ScheduledTooFar"));
});

test("typed errors carry the server's details: a field and its limit", async () => {
  const err = await client.enqueue({ queue: "errs", jobType: "x".repeat(300) }).then(
    () => assert.fail("a 300-byte job type was accepted"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof InvalidArgumentError, String(err));
  assert.ok(err instanceof SeppError);
  assert.equal(err.field, "job_type");
  assert.match(err.limit + " " + err.description, /256/);
  assert.equal(err.op, "enqueue");
  await assert.rejects(client.getJob("999999999"), NotFoundError);
});

test("wait: a poll that runs out is not terminal; a death wakes the wait with its cause; an unknown job is NotFound", async () => {
  const { jobId } = await client.enqueue({ queue: "wait", jobType: "resize" });
  const polled = await client.pollJob(jobId, 50);
  assert.equal(polled.terminal, false);
  assert.equal(polled.state, "ready");
  assert.equal(polled.job.id, jobId);

  const waiting = client.wait(jobId);
  const [d] = await client.reserve("wait");
  assert.equal(await client.nack(d!.ctx, RetryDirective.deadLetter(), "corrupt image"), true);
  const out = await waiting;
  assert.deepEqual([out.terminal, out.state, out.cause], [true, "dead", "rejected"]);
  assert.ok(out.finishedAt, "finishedAt set");

  await assert.rejects(client.wait(String(BigInt(jobId) + 100000n)), NotFoundError);
});

test("ackWithResult: the result is read back by wait and getJob; a queue that keeps none refuses it, lease held", async () => {
  const { jobId } = await client.enqueue({ queue: "kept", jobType: "resize" });
  const waiting = client.wait(jobId);
  const [d] = await client.reserve("kept");
  await client.ackWithResult(d!.ctx, new TextEncoder().encode('{"width":640}'));
  const out = await waiting;
  assert.deepEqual([out.terminal, out.state, new TextDecoder().decode(out.result)], [true, "completed", '{"width":640}']);
  const job = await client.getJob(jobId);
  assert.equal(job.state, "completed");
  assert.equal(new TextDecoder().decode(job.result), '{"width":640}');
  assert.ok(job.completedAt, "completedAt set");

  const eff = await client.createQueue("kept-created", { completedRetentionMs: 300000 });
  assert.equal(eff.completedRetentionMs, 300000);
  assert.equal((await client.getQueue("kept-created")).settings.completedRetentionMs, 300000);

  await client.enqueue({ queue: "not-kept", jobType: "resize" });
  const [e] = await client.reserve("not-kept");
  await assert.rejects(client.ackWithResult(e!.ctx, new TextEncoder().encode("lost")), WrongStateError);
  await client.ack(e!.ctx);
});

test("reportProgress: kept with the job while reserved, bounds refused, cleared by a nack", async () => {
  const { jobId } = await client.enqueue({ queue: "progress", jobType: "export" });
  const [d] = await client.reserve("progress");
  assert.equal(d!.job.progress, undefined);
  const deadline = await client.reportProgress(d!.ctx, 40, "exported 4000 of 10000 rows", 120_000);
  assert.ok(deadline.getTime() > Date.now() + 100_000, "lease extended");
  assert.deepEqual((await client.getJob(jobId)).progress, { percent: 40, message: "exported 4000 of 10000 rows" });
  await client.extendLease(d!.ctx, 60_000); // a plain extension keeps it
  assert.deepEqual((await client.getJob(jobId)).progress, { percent: 40, message: "exported 4000 of 10000 rows" });
  await assert.rejects(client.reportProgress(d!.ctx, 101), InvalidArgumentError);
  await assert.rejects(client.reportProgress(d!.ctx, 1, "x".repeat(257)), InvalidArgumentError);
  await client.nack(d!.ctx, RetryDirective.default(), "again");
  assert.equal((await client.getJob(jobId)).progress, undefined, "the retry starts without");
});

test("nack(ctx, RetryDirective...) says whether it dead-lettered", async () => {
  await client.enqueue({ queue: "nack", jobType: "t", maxAttempts: 3 });
  let [d] = await client.reserve("nack");
  assert.equal(await client.nack(d!.ctx, RetryDirective.default(), "transient"), false);
  [d] = await client.reserve("nack");
  assert.equal(d!.ctx.attempt, 2, "redelivered as attempt 2");
  assert.equal(d!.job.lastReason, "transient");

  assert.equal(await client.nack(d!.ctx, RetryDirective.after(60_000), "later"), false);
  const j = await client.getJob(d!.ctx.jobId);
  assert.equal(j.state, "scheduled");
  assert.ok(j.nextAttemptAt && j.nextAttemptAt.getTime() > Date.now() + 50_000, "waits about a minute");

  await client.enqueue({ queue: "nack", jobType: "reject" });
  [d] = await client.reserve("nack");
  assert.equal(await client.nack(d!.ctx, RetryDirective.deadLetter(), "bad input"), true);

  await client.enqueue({ queue: "nack", jobType: "last", maxAttempts: 1 });
  [d] = await client.reserve("nack");
  assert.equal(d!.ctx.attempt, d!.ctx.maxAttempts, "the last try");
  assert.equal(await client.nack(d!.ctx, RetryDirective.default(), "again"), true, "the last attempt's nack dead-letters");

  const recs = await client.drainDeadLetters("nack", 10);
  assert.deepEqual(recs.map((r) => [r.job.jobType, r.cause]).sort(), [
    ["last", "attempts_exhausted"],
    ["reject", "rejected"],
  ]);
  await assert.rejects(client.nack(d!.ctx, RetryDirective.after(-1)), InvalidArgumentError);
});

test("a job shows when its delivery started, its ended attempts in full, and a forwarded copy its origin", async () => {
  await client.enqueue({ queue: "origin", jobType: "t", maxAttempts: 5 });
  const [first] = await client.reserve("origin", { workerId: "w1" });
  assert.ok(first!.job.startedAt instanceof Date, "a reserved job shows when its delivery started");
  await client.nack(first!.ctx, RetryDirective.default(), "transient");
  const [d] = await client.reserve("origin", { workerId: "w2" });
  const [a] = (await client.getJob(d!.ctx.jobId)).history;
  assert.equal(a!.outcome, "nack");
  assert.equal(a!.directive, "default");
  assert.equal(a!.workerId, "w1");
  assert.equal(a!.leaseToken, first!.ctx.leaseToken);
  assert.ok(a!.startedAt instanceof Date && a!.endedAt instanceof Date, "the attempt's start and end");
  assert.ok(typeof a!.durationMs === "number" && a!.durationMs >= 0, `durationMs ${a!.durationMs}`);

  await client.nack(d!.ctx, RetryDirective.deadLetter(), "bad input");
  const [f] = await client.reserve("origin.dead");
  const o = f!.job.origin;
  assert.ok(o, "the forwarded copy names its origin");
  assert.ok(o.failedAt instanceof Date);
  assert.deepEqual(
    { queue: o.queue, jobId: o.jobId, cause: o.cause, lastReason: o.lastReason, finalAttempt: o.finalAttempt },
    { queue: "origin", jobId: d!.ctx.jobId, cause: "rejected", lastReason: "bad input", finalAttempt: 2 },
  );
  assert.equal(d!.job.origin, undefined, "a job enqueued by a producer has none");
  await client.ack(f!.ctx);
});

test("release hands a job back without burning the attempt; extendLease moves the deadline", async () => {
  await client.enqueue({ queue: "rel", jobType: "t" });
  let [d] = await client.reserve("rel", { leaseMs: 5_000 });
  const deadline = await client.extendLease(d!.ctx, 60_000);
  assert.ok(deadline instanceof Date);
  assert.ok(deadline.getTime() > d!.ctx.leaseDeadline!.getTime() + 30_000, `${deadline.toISOString()} vs ${d!.ctx.leaseDeadline!.toISOString()}`);
  await client.release(d!.ctx);
  [d] = await client.reserve("rel");
  assert.equal(d!.ctx.attempt, 1);
  await client.ack(d!.ctx);
  await assert.rejects(client.extendLease(d!.ctx, 1000), LeaseLostError);
});

test("ackBatch answers per delivery", async () => {
  await client.enqueueBatch([1, 2].map(() => ({ queue: "ackb", jobType: "t" })));
  const ds = await client.reserve("ackb", { max: 2 });
  assert.equal(ds.length, 2);
  await client.ack(ds[1]!.ctx);
  const errs = await client.ackBatch(ds.map((d) => d.ctx));
  assert.equal(errs[0], undefined);
  assert.ok(errs[1] instanceof LeaseLostError, String(errs[1]));
});

test("drainDeadLetters(queue, max) removes what it returns; record.toEnqueueRequest() replays as a fresh job", async () => {
  await client.enqueue({ queue: "dlq", jobType: "welcome", payload: "p-1", priority: Priority.P3, custom: { k: "v" }, maxAttempts: 5 });
  const [d] = await client.reserve("dlq");
  await client.nack(d!.ctx, RetryDirective.deadLetter(), "boom");
  const recs = await client.drainDeadLetters("dlq", 100);
  assert.equal(recs.length, 1);
  const r = recs[0]!;
  assert.equal(r.jobId, d!.ctx.jobId);
  assert.equal(r.cause, "rejected");
  assert.equal(r.lastReason, "boom");
  assert.equal(r.finalAttempt, 1);
  assert.ok(r.failedAt instanceof Date);
  assert.equal(text(r.job.payload), "p-1");
  assert.deepEqual(await client.drainDeadLetters("dlq", 100), [], "drained means gone");

  const again = await client.enqueue(r.toEnqueueRequest());
  assert.notEqual(again.jobId, r.jobId);
  const [d2] = await client.reserve("dlq");
  assert.equal(d2!.ctx.jobId, again.jobId);
  assert.equal(d2!.ctx.attempt, 1);
  assert.equal(text(d2!.job.payload), "p-1");
  assert.equal(d2!.job.priority, 3);
  assert.equal(d2!.ctx.maxAttempts, 5);
  assert.deepEqual(d2!.job.custom, { k: "v" });
  await client.ack(d2!.ctx);
});

test("a drain is not retried when its answer may have been lost", async () => {
  await client.enqueue({ queue: "drain-drop", jobType: "t" });
  const [d] = await client.reserve("drain-drop");
  await client.nack(d!.ctx, RetryDirective.deadLetter(), "x");
  const f = faultyFetch((m) => m === "DrainDeadLetters");
  const c = await SeppClient.connect(cluster.urls, { fetch: f.fetch });
  try {
    await assert.rejects(c.drainDeadLetters("drain-drop", 10), UnknownOutcomeError);
    assert.equal(f.calls.get("DrainDeadLetters"), 1, "sent once, not retried");
    // The server did apply it: the record is gone, as the error warned.
    assert.deepEqual(await client.drainDeadLetters("drain-drop", 10), []);
  } finally {
    c.close();
  }
});

test("the producer batches concurrent enqueues, each with its own result", async () => {
  const f = faultyFetch(() => false);
  const c = await SeppClient.connect(cluster.urls, { fetch: f.fetch });
  try {
    const p = c.producer({ lingerMs: 5, maxBatch: 64 });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => p.enqueue({ queue: "prod", jobType: "t", payload: String(i) })));
    await p.close();
    await assert.rejects(p.enqueue({ queue: "prod", jobType: "t" }), ClosedError);
    assert.equal(new Set(results.map((r) => r.jobId)).size, 200);
    const batches = f.calls.get("EnqueueBatch") ?? 0;
    assert.ok(batches >= 4 && batches < 50, `${batches} EnqueueBatch calls for 200 jobs`);
    assert.equal(f.calls.get("Enqueue") ?? 0, 0);
    let seen = 0;
    for (;;) {
      const ds = await client.reserve("prod", { max: 100 });
      if (ds.length === 0) break;
      seen += ds.length;
      await client.ackBatch(ds.map((d) => d.ctx));
    }
    assert.equal(seen, 200);
  } finally {
    c.close();
  }
});

test("reserve long-polls, and an AbortSignal ends it", async () => {
  const t0 = Date.now();
  const waiting = client.reserve("poll", { waitMs: 10_000 });
  await new Promise((r) => setTimeout(r, 200));
  await client.enqueue({ queue: "poll", jobType: "t" });
  const ds = await waiting;
  assert.equal(ds.length, 1, "the waiting reserve got the job enqueued meanwhile");
  assert.ok(Date.now() - t0 < 9_000);
  await client.ack(ds[0]!.ctx);

  const ctl = new AbortController();
  const p = client.reserve("poll", { waitMs: 10_000, signal: ctl.signal });
  setTimeout(() => ctl.abort(), 100);
  await assert.rejects(p, (e: unknown) => e instanceof CanceledError || e instanceof UnknownOutcomeError);
});

test("an attempt slower than leaderProbeMs asks who leads, and the asking ends with the attempt", async () => {
  const f = faultyFetch(() => false);
  const slow = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    if (String(input).endsWith("/GetJob")) await new Promise((r) => setTimeout(r, 700));
    return f.fetch(input, init);
  };
  const c = await SeppClient.connect(cluster.urls, { fetch: slow as typeof fetch, leaderProbeMs: 100 });
  try {
    const r = await c.enqueue({ queue: "probe", jobType: "t" });
    assert.equal((await c.getJob(r.jobId)).id, r.jobId, "the leader was still the leader: the slow attempt stood");
    const asked = f.calls.get("Status") ?? 0;
    assert.ok(asked >= 1, "the other nodes were asked who leads");
    await new Promise((res) => setTimeout(res, 600));
    assert.equal(f.calls.get("Status") ?? 0, asked, "no probing after the attempt ended");
  } finally {
    c.close();
  }
});

test("with no node reachable the client gives up typed, within its budget", async () => {
  await assert.rejects(SeppClient.connect("127.0.0.1:3", { retryTimeoutMs: 300 }), UnavailableError);
});

// ---- the Worker ----

test("Worker: success acks; retry, retryAfter and permanent map onto the nack directive", async () => {
  const seen: string[] = [];
  const w = new Worker(client, { concurrency: 4, waitMs: 500, onError: () => {} });
  w.handle("wk", "ok", (d) => {
    seen.push(`ok:${d.ctx.attempt}`);
  });
  w.handle("wk", "flaky", (d) => {
    seen.push(`flaky:${d.ctx.attempt}`);
    if (d.ctx.attempt === 1) throw retry(new Error("try again"));
  });
  w.handle("wk", "later", (d) => {
    seen.push(`later:${d.ctx.attempt}`);
    throw retryAfter(60_000, new Error("rate limited"));
  });
  w.handle("wk", "", (d) => {
    seen.push(`any:${d.job.jobType}`);
    throw permanent(new Error("cannot ever work"));
  });
  const ok = await client.enqueue({ queue: "wk", jobType: "ok" });
  const flaky = await client.enqueue({ queue: "wk", jobType: "flaky" });
  const later = await client.enqueue({ queue: "wk", jobType: "later" });
  const other = await client.enqueue({ queue: "wk", jobType: "other" });
  w.start();
  try {
    await waitFor("the worker to handle every job", () => seen.length >= 5);
    await waitFor("the acks", async () => {
      const gone = await Promise.all([ok, flaky].map((r) => client.getJob(r.jobId).then(() => false, (e) => e instanceof NotFoundError)));
      return gone.every(Boolean);
    });
    assert.deepEqual([...seen].sort(), ["any:other", "flaky:1", "flaky:2", "later:1", "ok:1"]);
    const l = await client.getJob(later.jobId);
    assert.equal(l.state, "scheduled", "retryAfter waits");
    assert.match(l.lastReason, /^rate limited \(retry after 60000 ms\)$/);
    assert.ok(l.nextAttemptAt && l.nextAttemptAt.getTime() > Date.now() + 30_000);
    const recs = await client.drainDeadLetters("wk", 10);
    assert.equal(recs.length, 1);
    assert.equal(recs[0]!.jobId, other.jobId);
    assert.equal(recs[0]!.cause, "rejected");
    assert.equal(recs[0]!.lastReason, "cannot ever work");
  } finally {
    assert.equal(await w.stop(), true);
  }
});

test("Worker: the lease is extended while a slow handler runs", async () => {
  const r = await client.enqueue({ queue: "slow", jobType: "t" });
  let done = false;
  const w = new Worker(client, { leaseMs: 1_500, waitMs: 200, onError: () => {} });
  w.handle("slow", "", async (_d, signal) => {
    await new Promise((res) => setTimeout(res, 4_000));
    assert.equal(signal.aborted, false, "the lease was kept");
    done = true;
  });
  w.start();
  try {
    await waitFor("the handler to start", async () => (await client.getJob(r.jobId)).state === "reserved");
    // Well past the 1.5 s lease the job is still this worker's.
    await new Promise((res) => setTimeout(res, 2_500));
    assert.deepEqual(await client.reserve("slow"), [], "nobody else got the job");
    await waitFor("the handler and its ack", async () => done && (await client.getJob(r.jobId).then(() => false, (e) => e instanceof NotFoundError)));
  } finally {
    await w.stop();
  }
});

test("Worker: a lost lease aborts the handler's signal, and the worker does not answer for the job", async () => {
  // This worker's lease extensions never arrive, so its 1.2 s lease lapses
  // on the server and another reserver takes the job.
  const blocked = faultyFetch(
    () => false,
    (m) => m === "ExtendLease",
  );
  const c = await SeppClient.connect(cluster.urls, { fetch: blocked.fetch, retryTimeoutMs: 200 });
  const r = await client.enqueue({ queue: "lost", jobType: "t" });
  let aborted = false;
  const errors: unknown[] = [];
  const w = new Worker(c, { leaseMs: 1_200, waitMs: 200, onError: (e) => errors.push(e) });
  w.handle("lost", "", async (_d, signal) => {
    await new Promise<void>((res) => signal.addEventListener("abort", () => res()));
    aborted = true;
  });
  w.start();
  try {
    await waitFor("the handler's signal to abort", () => aborted, 15_000);
    // Stopped, so that it does not reserve the job again when it returns.
    await w.stop();
    await waitFor("the job to come back", async () => {
      const ds = await client.reserve("lost");
      if (ds.length === 0) return false;
      assert.equal(ds[0]!.ctx.jobId, r.jobId);
      // Redelivered, not acked by the worker that lost it (which may have
      // reserved it once more before it stopped).
      assert.ok(ds[0]!.ctx.attempt >= 2, `attempt ${ds[0]!.ctx.attempt}`);
      await client.ack(ds[0]!.ctx);
      return true;
    });
    assert.ok(errors.some((e) => e instanceof LeaseLostError), "the lost lease was reported");
  } finally {
    await w.stop();
    c.close();
  }
});

test("Worker: an operator's cancel aborts the handler with JobCancelledError, not a lost lease", async () => {
  const r = await client.enqueue({ queue: "cancelled", jobType: "t" });
  let started = false;
  let reason: unknown;
  const errors: unknown[] = [];
  const w = new Worker(client, { leaseMs: 900, waitMs: 200, onError: (e) => errors.push(e) });
  w.handle("cancelled", "", async (_d, signal) => {
    started = true;
    await new Promise<void>((res) => signal.addEventListener("abort", () => res()));
    reason = (signal as { reason?: unknown }).reason;
  });
  w.start();
  try {
    await waitFor("the handler to start", () => started, 15_000);
    // Any node: a follower forwards the cancel to the leader.
    await waitFor("the cancel", async () => {
      for (const url of cluster.urls) {
        try {
          await post(url, "sepp.v1.AdminService/CancelJobs", { jobIds: [String(r.jobId)], reason: "stuck" });
          return true;
        } catch {
          // not this node
        }
      }
      return false;
    });
    await waitFor("the handler's signal to abort", () => reason !== undefined, 15_000);
    assert.ok(reason instanceof JobCancelledError, `reason ${String(reason)}`);
    await waitFor("the report", () => errors.length > 0, 5_000);
    assert.ok(errors.some((e) => e instanceof JobCancelledError), `errors ${errors.map(String).join("; ")}`);
    assert.ok(!errors.some((e) => e instanceof LeaseLostError && !(e instanceof JobCancelledError)), "reported as a lost lease");
  } finally {
    await w.stop();
  }
});

/** client.wait bounded by a deadline (its signal aborts the wait). */
async function waitJob(jobId: string, timeoutMs = 20_000) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), timeoutMs);
  try {
    return await client.wait(jobId, { signal: ctl.signal });
  } finally {
    clearTimeout(t);
  }
}

test("Worker: a handler that resolves with a Uint8Array completes its job with that result", async () => {
  await client.createQueue("wk-result", { completedRetentionMs: 300_000 });
  const errors: unknown[] = [];
  let wrapped = 0;
  // Through an aroundHandler too (a tracing hook's): the result still reaches the ack.
  const w = new Worker(client, { waitMs: 200, onError: (e) => errors.push(e), aroundHandler: async (_d, run) => { wrapped++; await run(); } });
  w.handle("wk-result", "resize", async () => new TextEncoder().encode('{"width":320}'));
  w.handle("wk-result", "plain", () => {});
  const r = await client.enqueue({ queue: "wk-result", jobType: "resize" });
  const p = await client.enqueue({ queue: "wk-result", jobType: "plain" });
  w.start();
  try {
    const out = await waitJob(r.jobId);
    assert.equal(out.terminal, true);
    assert.equal(out.state, "completed");
    assert.equal(text(out.result), '{"width":320}');
    const j = await client.getJob(r.jobId);
    assert.equal(j.state, "completed");
    assert.equal(text(j.result), '{"width":320}');
    assert.equal(j.attempt, 1);
    const plain = await waitJob(p.jobId);
    assert.equal(plain.state, "completed");
    assert.equal(plain.result.length, 0);
    assert.equal(wrapped, 2);
    assert.deepEqual(errors, []);
  } finally {
    assert.equal(await w.stop(), true);
  }
});

test("Worker: a handler's progress rides the lease extension, getJob reads it while it runs, the ack clears it; bad input throws", async () => {
  await client.createQueue("wk-progress", { completedRetentionMs: 300_000 });
  const errors: unknown[] = [];
  const bad: unknown[] = [];
  let running!: () => void;
  const started = new Promise<void>((r) => (running = r));
  let finish!: () => void;
  const finished = new Promise<void>((r) => (finish = r));
  const w = new Worker(client, { waitMs: 200, progressIntervalMs: 100, onError: (e) => errors.push(e) });
  w.handle("wk-progress", "export", async (d) => {
    for (const [pct, msg] of [[101, ""], [-1, ""], [2.5, ""], [50, "é".repeat(129)]] as const) {
      try {
        d.progress(pct, msg);
      } catch (e) {
        bad.push(e);
      }
    }
    d.progress(10, "starting");
    d.progress(40, "exported 4000 of 10000 rows"); // only the latest is sent
    running();
    await finished;
  });
  const { jobId } = await client.enqueue({ queue: "wk-progress", jobType: "export" });
  w.start();
  try {
    await started;
    await waitFor("the progress", async () => (await client.getJob(jobId)).progress?.percent === 40);
    const j = await client.getJob(jobId);
    assert.equal(j.state, "reserved");
    assert.deepEqual(j.progress, { percent: 40, message: "exported 4000 of 10000 rows" });
    finish();
    const out = await waitJob(jobId);
    assert.equal(out.state, "completed");
    assert.equal((await client.getJob(jobId)).progress, undefined, "cleared when the delivery ends");
    assert.deepEqual(
      bad.map((e) => (e instanceof InvalidArgumentError ? e.field : String(e))),
      ["progress.percent", "progress.percent", "progress.percent", "progress.message"],
    );
    assert.deepEqual(errors, []);
  } finally {
    finish();
    assert.equal(await w.stop(), true);
  }
});

test("Worker: a refused progress report is dropped, the lease extended without it, the refusal reported once per delivery", async () => {
  // While some member does not keep progress yet the server refuses it
  // (WrongState, feature=progress) and extends nothing. The refusal is
  // stood in for on this client; the extensions are real.
  const c = await SeppClient.connect(cluster.urls);
  const refusals: number[] = [];
  const plain: string[] = [];
  let onRefused = () => {};
  let onExtended = () => {};
  c.reportProgress = async (_ctx, percent) => {
    refusals.push(percent);
    onRefused();
    throw new WrongStateError("report progress", "failed_precondition", "VERSION feature=progress: not every member applies it yet");
  };
  const extendLease = c.extendLease.bind(c);
  c.extendLease = async (ctx, leaseMs, opts) => {
    const at = await extendLease(ctx, leaseMs, opts);
    plain.push(ctx.jobId);
    onExtended();
    return at;
  };
  const errors: unknown[] = [];
  const w = new Worker(c, { waitMs: 200, progressIntervalMs: 50, onError: (e) => errors.push(e) });
  w.handle("wk-progress-refused", "export", async (d) => {
    for (const pct of [10, 20]) {
      const refused = new Promise<void>((r) => (onRefused = r));
      const extended = new Promise<void>((r) => (onExtended = r));
      d.progress(pct, "rows");
      await refused;
      await extended;
    }
  });
  const { jobId } = await client.enqueue({ queue: "wk-progress-refused", jobType: "export" });
  w.start();
  try {
    await waitFor("the ack", async () => {
      try {
        await client.getJob(jobId);
        return false;
      } catch (e) {
        return e instanceof NotFoundError;
      }
    });
    assert.deepEqual(refusals, [10, 20]);
    assert.ok(plain.length >= 2 && plain.every((id) => id === jobId), String(plain));
    assert.equal(errors.length, 1, String(errors));
    assert.ok(errors[0] instanceof WrongStateError);
  } finally {
    assert.equal(await w.stop(), true);
    c.close();
  }
});

test("Worker: a refused result reaches onError typed; WrongState acks without it, one over max_result_bytes runs again", async () => {
  // A queue that keeps no completed jobs: WrongStateError, then a plain ack.
  const errors: unknown[] = [];
  const runs: number[] = [];
  const w = new Worker(client, { waitMs: 200, onError: (e) => errors.push(e) });
  w.handle("wk-not-kept", "", (d) => {
    runs.push(d.ctx.attempt);
    return new TextEncoder().encode("nowhere to keep it");
  });
  const r = await client.enqueue({ queue: "wk-not-kept", jobType: "resize" });
  w.start();
  try {
    await waitFor("the ack without the result", () => client.getJob(r.jobId).then(() => false, (e) => e instanceof NotFoundError));
    assert.deepEqual(runs, [1]);
    assert.equal(errors.length, 1, `errors ${errors.map(String).join("; ")}`);
    assert.ok(errors[0] instanceof WrongStateError, String(errors[0]));
  } finally {
    assert.equal(await w.stop(), true);
  }

  // Over max_result_bytes: InvalidArgumentError naming the field result;
  // the job is not acked and comes back once its lease expires.
  await client.createQueue("wk-oversized", { completedRetentionMs: 300_000 });
  const limits = (await client.serverInfo()).raw["limits"] as { maxResultBytes?: string | number } | undefined;
  const max = Number(limits?.maxResultBytes ?? 65536);
  const errors2: unknown[] = [];
  const runs2: number[] = [];
  const w2 = new Worker(client, { leaseMs: 1_000, waitMs: 200, onError: (e) => errors2.push(e) });
  w2.handle("wk-oversized", "", (d) => {
    runs2.push(d.ctx.attempt);
    return d.ctx.attempt === 1 ? new Uint8Array(max + 1) : new TextEncoder().encode("small");
  });
  const r2 = await client.enqueue({ queue: "wk-oversized", jobType: "resize", maxAttempts: 3 });
  w2.start();
  try {
    const out = await waitJob(r2.jobId);
    assert.equal(out.state, "completed");
    assert.equal(text(out.result), "small");
    assert.deepEqual(runs2, [1, 2]);
    const refused = errors2.filter((e) => e instanceof InvalidArgumentError);
    assert.equal(refused.length, 1, `errors ${errors2.map(String).join("; ")}`);
    assert.equal((refused[0] as InvalidArgumentError).field, "result");
    const j = await client.getJob(r2.jobId);
    assert.equal(j.attempt, 2);
    assert.deepEqual(j.history.map((h) => h.outcome), ["lease_expired"]);
  } finally {
    assert.equal(await w2.stop(), true);
  }
});

test("Worker: stop lets a running handler finish and be acked; out of time it aborts and releases", async () => {
  const r = await client.enqueue({ queue: "stop", jobType: "t" });
  let started = false;
  let finished = false;
  const w = new Worker(client, { waitMs: 200, onError: () => {} });
  w.handle("stop", "", async () => {
    started = true;
    await new Promise((res) => setTimeout(res, 800));
    finished = true;
  });
  w.start();
  await waitFor("the handler to start", () => started);
  assert.equal(await w.stop(10_000), true);
  assert.ok(finished);
  await assert.rejects(client.getJob(r.jobId), NotFoundError, "acked before stop returned");

  const r2 = await client.enqueue({ queue: "stop2", jobType: "t" });
  let sawAbort = false;
  const w2 = new Worker(client, { waitMs: 200, onError: () => {} });
  w2.handle("stop2", "", async (_d, signal) => {
    await new Promise<void>((res) => signal.addEventListener("abort", () => res()));
    sawAbort = true;
    throw new Error("aborted");
  });
  w2.start();
  await waitFor("the second handler to hold its job", async () => (await client.getJob(r2.jobId)).state === "reserved");
  assert.equal(await w2.stop(300), false, "stop ran out of time");
  assert.ok(sawAbort);
  const j = await client.getJob(r2.jobId);
  assert.equal(j.state, "ready", "released, not nacked");
  const [d] = await client.reserve("stop2");
  assert.equal(d!.ctx.attempt, 1, "no attempt burned");
  await client.ack(d!.ctx);
});

test("raw Connect JSON, as curl sends it, reaches the same cluster", async () => {
  const li = await cluster.leaderIndex();
  const follower = cluster.nodes[(li + 1) % cluster.nodes.length]!;
  const r = await post(follower.url, "sepp.v1.QueueService/Enqueue", { queue: "raw", jobType: "t" });
  assert.match(String(r.jobId), /^[0-9]+$/);
  const [d] = await client.reserve("raw");
  assert.equal(d!.ctx.jobId, r.jobId);
  await client.ack(d!.ctx);
});

// ---- the spec pages' TypeScript samples, verbatim ----
//
// test/spec-samples holds every TypeScript sample of the spec pages
// (scripts/extract-samples.mjs copies them; `make sdk-typescript-samples`
// refreshes the copies). Each is compiled as it stands and run in its own
// Node process importing "sepp"; the address it names, localhost:50051, is
// pointed at the test cluster (test/redirect-fetch.cjs). What it did is
// then checked on the cluster.

const here = dirname(fileURLToPath(import.meta.url));
const sampleDir = resolve(here, "../samples");
const sampleSources = resolve(here, "../../test/spec-samples");

async function jobsOf(queue: string, state: string): Promise<Job[]> {
  const r = await post(cluster.urls[0]!, "sepp.v1.AdminService/ListJobs", { queue, state, limit: 100 });
  return ((r.jobs as unknown[]) ?? []).map((j) => jobFromJSON(j));
}

/** What each sample must have done, by file name. */
const sampleChecks: Record<string, () => Promise<void>> = {
  "priority-and-scheduling.1": async () => {
    const jobs = await jobsOf("emails", "JOB_STATE_READY");
    assert.equal(jobs.length, 1, "one job on emails");
    assert.equal(jobs[0]!.jobType, "password_reset");
    assert.equal(jobs[0]!.priority, 9, "Priority.MAX is 9");
    assert.equal(jobs[0]!.state, "ready");
  },
  "priority-and-scheduling.2": async () => {
    const jobs = await jobsOf("reports", "JOB_STATE_SCHEDULED");
    assert.equal(jobs.length, 1, "one job on reports");
    assert.equal(jobs[0]!.jobType, "daily_rollup");
    assert.equal(jobs[0]!.state, "scheduled");
    const inMs = jobs[0]!.scheduledAt!.getTime() - Date.now();
    assert.ok(inMs > 55 * 60_000 && inMs <= 60 * 60_000, `scheduled ${inMs} ms ahead, want an hour`);
  },
};

function runSample(file: string): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, ["--require", resolve(sampleSources, "../redirect-fetch.cjs"), file], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, SEPP_SAMPLE_TARGET: cluster.urls[0] },
    });
    let out = "";
    child.stdout?.on("data", (c) => (out += c.toString()));
    child.stderr?.on("data", (c) => (out += c.toString()));
    const t = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("exit", (code) => {
      clearTimeout(t);
      res({ code, out });
    });
  });
}

test("every TypeScript sample of the spec pages runs verbatim and does what its page says", async () => {
  const sources = readdirSync(sampleSources).filter((f) => f.endsWith(".ts")).map((f) => f.replace(/\.ts$/, ""));
  assert.ok(sources.length >= 2, `spec samples found: ${sources.join(", ")}`);
  for (const name of sources.sort()) {
    const check = sampleChecks[name];
    assert.ok(check, `no check for spec sample ${name}: add one to sampleChecks`);
    const file = resolve(sampleDir, `${name}.js`);
    assert.ok(existsSync(file), `${file} not built (make sdk-typescript compiles the samples)`);
    const { code, out } = await runSample(file);
    assert.equal(code, 0, `sample ${name} failed:\n${out}`);
    await check();
  }
});

// ---- trace context ----

test("trace context: the traceInjector stamps jobs without one, a request's own wins, the Worker's aroundHandler sees it on delivery", async () => {
  const injected = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "congo=t61rcWkgMzE" };
  const own = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
  let calls = 0;
  // docs:begin ts-injector
  // With OpenTelemetry: const carrier = {}; propagation.inject(context.active(), carrier);
  // return carrier.traceparent ? carrier : undefined;
  const traced = await SeppClient.connect(cluster.urls, {
    traceInjector: () => {
      calls++;
      return injected;
    },
  });
  // docs:end ts-injector
  try {
    const a = await traced.enqueue({ queue: "tr", jobType: "t" });
    const b = await traced.enqueue({ queue: "tr", jobType: "t", traceContext: own });
    const batch = await traced.enqueueBatch([{ queue: "tr", jobType: "t" }]);
    const p = traced.producer();
    const produced = await p.enqueue({ queue: "tr", jobType: "t" });
    await p.close();
    assert.equal(calls, 3, "b carried its own");
    assert.deepEqual((await traced.getJob(a.jobId)).traceContext, injected);
    assert.ok(batch[0]!.ok);
    const seen = new Map<string, unknown>();
    // docs:begin ts-around
    // With OpenTelemetry: const parent = propagation.extract(ROOT_CONTEXT, d.job.traceContext ?? {});
    // await tracer.startActiveSpan("process", {}, parent, async (span) => { await run(); span.end(); });
    const w = new Worker(traced, { waitMs: 200, onError: () => {}, aroundHandler: async (d, run) => {
      seen.set(d.ctx.jobId, d.job.traceContext);
      await run();
    } });
    // docs:end ts-around
    const handled: string[] = [];
    w.handle("tr", "", (d) => {
      handled.push(d.ctx.jobId);
    });
    w.start();
    try {
      await waitFor("four jobs handled", () => handled.length >= 4);
    } finally {
      await w.stop();
    }
    const batchID = batch[0]!.ok ? batch[0]!.result.jobId : "";
    assert.deepEqual(Object.fromEntries(seen), { [a.jobId]: injected, [b.jobId]: own, [batchID]: injected, [produced.jobId]: injected });
    await assert.rejects(traced.enqueue({ queue: "tr", jobType: "t", traceContext: { traceparent: "bogus" } }), (e: unknown) => e instanceof InvalidArgumentError && /trace_context\.traceparent/.test(e.message));
  } finally {
    traced.close();
  }
});

test("ackWithFollowUps: the follow-ups' results, a bad one refuses all, a lease lost before the ack enqueues nothing", async () => {
  const held = await client.enqueue({ queue: "fu-next", jobType: "t", idempotencyKey: "held" });
  const first = await client.enqueue({ queue: "fu-work", jobType: "charge" });
  const [d] = await client.reserve("fu-work", { workerId: "w" });
  await assert.rejects(client.ackWithFollowUps(d!.ctx, [{ queue: "fu-next", jobType: "t" }, { queue: "fu-next", jobType: "t", priority: 10 }]),
    (e: unknown) => e instanceof InvalidArgumentError && e.message.includes("follow_ups[1]"));
  assert.equal((await client.getJob(first.jobId)).state, "reserved");
  const res = await client.ackWithFollowUps(d!.ctx, [
    { queue: "fu-next", jobType: "ship", payload: new TextEncoder().encode("p") },
    { queue: "fu-next", jobType: "t", idempotencyKey: "held" },
  ]);
  assert.equal(res.length, 2);
  assert.equal(res[0]!.duplicate, false);
  assert.equal(res[0]!.state, "ready");
  assert.ok(res[0]!.idempotencyKey);
  assert.equal(res[1]!.duplicate, true);
  assert.equal(res[1]!.jobId, held.jobId);
  assert.equal((await client.getJob(res[0]!.jobId)).jobType, "ship");
  await assert.rejects(client.getJob(first.jobId), NotFoundError);

  // A lease lost before the ack: it lapses, and nothing is enqueued.
  await client.enqueue({ queue: "fu-work", jobType: "t" });
  const [e] = await client.reserve("fu-work", { workerId: "w", leaseMs: 1000 });
  await waitFor("the lease to lapse", async () => (await client.getJob(e!.ctx.jobId)).state !== "reserved");
  await assert.rejects(client.ackWithFollowUps(e!.ctx, [{ queue: "fu-never", jobType: "t" }]), LeaseLostError);
  await assert.rejects(client.getQueue("fu-never"), NotFoundError);
});

test("Worker: a handler that resolves with a Completion enqueues its follow-ups with the ack; a refused one reruns the job", async () => {
  await client.enqueue({ queue: "wk-chain", jobType: "holder", unique: { key: "taken" }, scheduledAt: new Date(Date.now() + 3_600_000) });
  const errors: unknown[] = [];
  const runs: number[] = [];
  const seen: string[] = [];
  const w = new Worker(client, { waitMs: 200, onError: (e) => errors.push(e) });
  w.handle("wk-chain", "step-1", (d) => {
    runs.push(d.ctx.attempt);
    const followUps = [{ queue: "wk-chain", jobType: "step-2", payload: new TextEncoder().encode("from step 1") }];
    if (d.ctx.attempt === 1) followUps.push({ queue: "wk-chain", jobType: "t", unique: { key: "taken", refuse: true } } as never);
    return { followUps };
  });
  w.handle("wk-chain", "step-2", (d) => {
    seen.push(text(d.job.payload));
  });
  await client.enqueue({ queue: "wk-chain", jobType: "step-1" });
  w.start();
  try {
    await waitFor("step 2 to run", () => seen.length > 0);
  } finally {
    assert.equal(await w.stop(), true);
  }
  assert.deepEqual(seen, ["from step 1"]);
  assert.deepEqual(runs, [1, 2]);
  assert.equal(errors.length, 1, String(errors));
  assert.ok(errors[0] instanceof AlreadyExistsError, String(errors[0]));
});

// ---- workflows: jobs that wait for each other ----

test("workflow: a plan, three renders after it, a stitch after them that runs whatever they did and reads their outcomes and results", async () => {
  // The stitch reads the renders' results: their queue keeps completed jobs.
  await client.createQueue("tiles", { completedRetentionMs: 3_600_000 });
  // docs:begin workflow
  const jobs = await client.enqueueBatch([
    { queue: "tiles", jobType: "plan" }, // 0
    { queue: "tiles", jobType: "render", payload: "tile 1", after: [0] }, // 1
    { queue: "tiles", jobType: "render", payload: "tile 2", after: [0] }, // 2
    { queue: "tiles", jobType: "render", payload: "tile 3", after: [0] }, // 3
    { queue: "tiles", jobType: "stitch", after: [1, 2, 3], onParentFailure: "run" }, // 4: runs whatever 1..3 did
  ]); // applied whole: if any job is refused, this rejects and nothing is enqueued
  const states = jobs.map((r) => (r.ok ? r.result.state : r.error.code));
  assert.deepEqual(states, ["ready", "blocked", "blocked", "blocked", "blocked"]);
  // docs:end workflow
  const ids = jobs.map((r) => (r.ok ? r.result.jobId : ""));
  const [plan, r1, r2, r3, stitch] = ids as [string, string, string, string, string];

  // Before the plan runs: only it can be reserved; the rest wait for their parents.
  const q = (await client.getQueue("tiles")).stats;
  assert.deepEqual([q.ready, q.blocked], [1, 4]);
  assert.deepEqual((await client.listJobs("tiles", "blocked")).jobs.map((j) => j.id), [r1, r2, r3, stitch]);
  const waiting = await client.getJob(stitch);
  assert.equal(waiting.state, "blocked");
  assert.equal(waiting.onParentFailure, "run");
  const none = { resultKept: false, result: new Uint8Array(0), resultOmitted: false }; // a parent without a result
  assert.deepEqual(waiting.parents, [r1, r2, r3].map((jobId) => ({ jobId, state: "blocked", cause: "unspecified", ended: false, ...none })));
  const render = await client.getJob(r1);
  assert.equal(render.onParentFailure, "cancel");
  assert.deepEqual(render.parents, [{ jobId: plan, state: "ready", cause: "unspecified", ended: false, ...none }]);
  assert.equal((await client.getJob(plan)).onParentFailure, undefined, "no parents, no policy");
  assert.deepEqual((await client.getJob(plan)).parents, []);
  // And the other way: getJob shows the jobs still waiting for a job; a
  // listing leaves them out.
  const planJob = await client.getJob(plan);
  assert.deepEqual([planJob.waitingChildren, planJob.waitingChildrenTotal], [[r1, r2, r3], 3]);
  assert.deepEqual([render.waitingChildren, render.waitingChildrenTotal], [[stitch], 1]);
  assert.deepEqual([waiting.waitingChildren, waiting.waitingChildrenTotal], [[], 0]);
  const blocked = (await client.listJobs("tiles", "blocked")).jobs;
  assert.deepEqual(blocked.map((j) => [j.id, j.waitingChildren, j.waitingChildrenTotal]), [r1, r2, r3, stitch].map((id) => [id, [], 0]));

  const errors: unknown[] = [];
  const seen: Job["parents"][] = [];
  const got: Job["parents"][] = [];
  const listed: Job["parents"][] = [];
  // The aroundHandler keeps what the stitch's delivery carried, and its job
  // as getJob and listJobs give it while it runs (a completed job no longer
  // holds its parents), for the asserts below.
  const w = new Worker(client, { waitMs: 200, onError: (e) => errors.push(e), aroundHandler: async (d, run) => {
    if (d.job.jobType === "stitch") {
      seen.push(d.job.parents);
      got.push((await client.getJob(d.ctx.jobId)).parents);
      listed.push(...(await client.listJobs("tiles", "reserved")).jobs.filter((j) => j.id === d.ctx.jobId).map((j) => j.parents));
    }
    await run();
  } });
  w.handle("tiles", "plan", () => {});
  w.handle("tiles", "render", (d) => {
    const tile = text(d.job.payload);
    if (tile === "tile 2") throw permanent(new Error("bad tile"));
    return new TextEncoder().encode(`rendered ${tile}`);
  });
  // docs:begin workflow-callback
  w.handle("tiles", "stitch", async (d, signal) => {
    // d.job.parents: the renders, in the order of its after, each with how it ended;
    // parentResults reads the completed ones' results (their queue keeps completed jobs).
    const parents = await client.parentResults(d.job.parents, { signal });
    const tiles = parents.map((p) => (p.kept ? new TextDecoder().decode(p.result) : `job ${p.jobId} ${p.state} (${p.cause})`));
    return new TextEncoder().encode(tiles.join(", ")); // the stitch's own result
  });
  // docs:end workflow-callback
  // Count the getJob calls of the renders (parentResults' reads).
  const reads: string[] = [];
  const getJob = client.getJob;
  client.getJob = async (id, opts) => {
    if ([r1, r2, r3].includes(id)) reads.push(id);
    return getJob.call(client, id, opts);
  };
  try {
    w.start();
    try {
      const out = await waitJob(stitch);
      assert.equal(out.state, "completed");
      assert.equal(text(out.result), `rendered tile 1, job ${r2} dead (rejected), rendered tile 3`);
    } finally {
      assert.equal(await w.stop(), true);
    }
    assert.deepEqual(errors, []);
    // The delivery carried the parents as they ended, with the completed
    // ones' results inline: parentResults made no getJob for them.
    const bytes = (s: string) => new TextEncoder().encode(s);
    assert.deepEqual(seen, [[
      { jobId: r1, state: "completed", cause: "unspecified", ended: true, resultKept: true, result: bytes("rendered tile 1"), resultOmitted: false },
      { jobId: r2, state: "dead", cause: "rejected", ended: true, ...none },
      { jobId: r3, state: "completed", cause: "unspecified", ended: true, resultKept: true, result: bytes("rendered tile 3"), resultOmitted: false },
    ]]);
    assert.deepEqual(reads, []);
    // getJob's job carries them too; listJobs' does not, and parentResults
    // then reads the completed ones with getJob.
    assert.deepEqual(got, seen);
    assert.equal(listed.length, 1);
    assert.deepEqual(listed[0]!.map((p) => [p.jobId, p.state, p.resultKept]), [[r1, "completed", false], [r2, "dead", false], [r3, "completed", false]]);
    const fromList = await client.parentResults(listed[0]!);
    assert.deepEqual(fromList.map((p) => [text(p.result), p.kept]), [["rendered tile 1", true], ["", false], ["rendered tile 3", true]]);
    assert.deepEqual(reads.sort(), [r1, r3].sort());
  } finally {
    client.getJob = getJob;
  }
  assert.deepEqual([(await client.getQueue("tiles")).stats.blocked], [0]);
  // Each parent ended and released its children: none wait any more.
  for (const id of [plan, r1]) {
    const done = await client.getJob(id);
    assert.deepEqual([done.state, done.waitingChildren, done.waitingChildrenTotal], ["completed", [], 0]);
  }
});

test("workflow: parentResults uses the results an answer carried and reads with getJob only those it left out", async () => {
  const parent = (jobId: string, kept: boolean, result: string, omitted: boolean): JobParent => ({
    jobId, state: "completed", cause: "unspecified", ended: true, resultKept: kept, result: new TextEncoder().encode(result), resultOmitted: omitted,
  });
  const parents = [parent("1", true, "one", false), parent("2", true, "", true), parent("3", false, "", false), parent("4", true, "", false)];
  const reads: string[] = [];
  const getJob = client.getJob;
  client.getJob = async (id) => {
    reads.push(id);
    if (id === "3") throw new NotFoundError("get job", "not_found", "no such job"); // its record is gone
    return jobFromJSON({ id, state: "JOB_STATE_COMPLETED", result: btoa(`read ${id}`) });
  };
  try {
    const got = await client.parentResults(parents);
    assert.deepEqual(reads, ["2", "3"]);
    assert.deepEqual(got.map((p) => [p.jobId, text(p.result), p.kept]), [["1", "one", true], ["2", "read 2", true], ["3", "", false], ["4", "", true]]);
    assert.equal(got[1]!.resultOmitted, true, "the rest as given");
  } finally {
    client.getJob = getJob;
  }
});

test("workflow rules: a batch with after goes whole or not at all, a lone enqueue or a producer cannot wait, a dead parent cancels its dependent", async () => {
  const field = (f: string) => (e: unknown) => e instanceof InvalidArgumentError && e.field === f;
  // An item the client refuses itself fails the whole call, not just its own result.
  await assert.rejects(client.enqueueBatch([{ queue: "wf-never", jobType: "a" }, { queue: "wf-never", jobType: "b", priority: 10 }, { queue: "wf-never", jobType: "c", after: [0] }]), field("jobs[1].priority"));
  await assert.rejects(client.enqueueBatch([{ queue: "wf-never", jobType: "a" }, { queue: "wf-never", jobType: "b", after: [-1] }]), field("jobs[1].after[0]"));
  // One the server refuses (an index not earlier than the item) too.
  await assert.rejects(client.enqueueBatch([{ queue: "wf-never", jobType: "a", after: [1] }, { queue: "wf-never", jobType: "b" }]), field("jobs[0].after[0]"));
  await assert.rejects(client.getQueue("wf-never"), NotFoundError);
  // Without after, the same item fails on its own.
  const loose = await client.enqueueBatch([{ queue: "wf-loose", jobType: "a" }, { queue: "wf-loose", jobType: "b", priority: 10 }]);
  assert.deepEqual(loose.map((r) => r.ok), [true, false]);
  // A lone enqueue (the server's refusal) or a producer's (the client's) has no call to wait within.
  await assert.rejects(client.enqueue({ queue: "wf-never", jobType: "a", after: [0] }), field("after"));
  const p = client.producer();
  await assert.rejects(p.enqueue({ queue: "wf-never", jobType: "a", after: [0] }), field("after"));
  await p.close();
  await assert.rejects(client.enqueue({ queue: "wf-never", jobType: "a", onParentFailure: "run" }), field("on_parent_failure"));
  await assert.rejects(client.getQueue("wf-never"), NotFoundError);

  // Cancel (the default): a dead parent dead-letters its dependent at once, naming it.
  const chain = await client.enqueueBatch([{ queue: "wf-chain", jobType: "a" }, { queue: "wf-chain", jobType: "b", after: [0] }]);
  const [a, b] = chain.map((r) => (r.ok ? r.result.jobId : ""));
  const [d] = await client.reserve("wf-chain");
  assert.equal(d?.ctx.jobId, a, "b is blocked: only a can be reserved");
  assert.equal(await client.nack(d!.ctx, RetryDirective.deadLetter(), "no"), true);
  const rec = await client.getDeadLetter(b!);
  assert.equal(rec.cause, "cancelled");
  assert.equal(rec.lastReason, `parent job ${a} was dead-lettered (rejected)`);

  // Follow-ups wait for each other the same way; a parent whose queue keeps
  // no completed jobs completes, but its result is not kept to read.
  await client.enqueue({ queue: "wf-work", jobType: "charge" });
  const [w] = await client.reserve("wf-work");
  const fu = await client.ackWithFollowUps(w!.ctx, [{ queue: "wf-next", jobType: "x" }, { queue: "wf-next", jobType: "y", after: [0] }]);
  assert.deepEqual(fu.map((r) => r.state), ["ready", "blocked"]);
  const [x] = await client.reserve("wf-next");
  assert.equal(x?.ctx.jobId, fu[0]!.jobId);
  await client.ack(x!.ctx);
  const [y] = await client.reserve("wf-next", { waitMs: 5_000 });
  assert.equal(y?.ctx.jobId, fu[1]!.jobId);
  assert.deepEqual(y!.job.parents, [{ jobId: fu[0]!.jobId, state: "completed", cause: "unspecified", ended: true, resultKept: false, result: new Uint8Array(0), resultOmitted: false }]);
  assert.deepEqual(await client.parentResults(y!.job.parents), [{ jobId: fu[0]!.jobId, state: "completed", cause: "unspecified", ended: true, resultKept: false, result: new Uint8Array(0), resultOmitted: false, kept: false }]);
  await client.ack(y!.ctx);
});
