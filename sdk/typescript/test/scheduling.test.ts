// Unique jobs, expiry of unstarted jobs and periodic schedules against a
// real three-node cluster (sepp dev); each test has queues and schedules of
// its own.
import { test } from "node:test";
import assert from "node:assert/strict";
import { waitFor, useCluster } from "./cluster.js";
import {
  SeppClient,
  AlreadyExistsError,
  UniqueConflictError,
  InvalidArgumentError,
  NotFoundError,
  Schedule,
} from "../src/index.js";

let client: SeppClient;

useCluster((_, cl) => {
  client = cl;
});

const text = (b: Uint8Array) => new TextDecoder().decode(b);

test("unique: a repeat returns the holder as a duplicate; refuse rejects with UniqueConflictError naming it; ack frees the key", async () => {
  const q = "uniq";
  const req = { queue: q, jobType: "rebuild", payload: "r1", custom: { tenant: "acme", run: "1" }, unique: { fields: ["tenant"] } };
  const first = await client.enqueue(req);
  assert.equal(first.duplicate, false);
  assert.equal(first.state, "ready");

  // Another caller, another idempotency key, a field the key does not name
  // differs: the derived key is the same, so no second job.
  const again = await client.enqueue({ ...req, custom: { tenant: "acme", run: "2" } });
  assert.equal(again.duplicate, true);
  assert.equal(again.jobId, first.jobId);
  assert.equal(again.state, "ready");
  // A different value of a named field derives another key.
  const other = await client.enqueue({ ...req, custom: { tenant: "globex" } });
  assert.equal(other.duplicate, false);
  assert.notEqual(other.jobId, first.jobId);

  const refused = await client.enqueue({ ...req, unique: { fields: ["tenant"], refuse: true } }).then(
    () => assert.fail("a refused unique enqueue resolved"),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof UniqueConflictError, `got ${String(refused)}`);
  assert.ok(refused instanceof AlreadyExistsError);
  assert.equal(refused.code, "already_exists");
  assert.equal(refused.jobId, first.jobId);
  assert.equal(refused.queue, q);

  // An explicit key, in a batch: each item has its own answer.
  const keyed = await client.enqueue({ queue: q, jobType: "sync", unique: { key: "sync-acme" } });
  const res = await client.enqueueBatch([
    { queue: q, jobType: "sync", unique: { key: "sync-acme" } },
    { queue: q, jobType: "sync", unique: { key: "sync-acme", refuse: true } },
    { queue: q, jobType: "sync", unique: { key: "sync-globex" } },
  ]);
  assert.ok(res[0]!.ok && res[0]!.result.duplicate && res[0]!.result.jobId === keyed.jobId, `item 0: ${JSON.stringify(res[0])}`);
  const r1 = res[1]!;
  assert.ok(!r1.ok && r1.error instanceof UniqueConflictError, `item 1: ${!r1.ok && r1.error}`);
  assert.equal(r1.error.jobId, keyed.jobId);
  assert.equal(r1.error.queue, q);
  assert.ok(res[2]!.ok && !res[2]!.result.duplicate);

  // The producer path carries the options too.
  const producer = client.producer();
  const viaProducer = await producer.enqueue({ queue: q, jobType: "sync", unique: { key: "sync-acme" } });
  await producer.close();
  assert.equal(viaProducer.duplicate, true);
  assert.equal(viaProducer.jobId, keyed.jobId);

  // Without completedForMs the ack frees the key: the next enqueue is a new job.
  const ds = await client.reserve(q, { max: 10 });
  assert.equal(ds.length, 4);
  await client.ackBatch(ds.map((d) => d.ctx));
  const freed = await client.enqueue(req);
  assert.equal(freed.duplicate, false);
  assert.notEqual(freed.jobId, first.jobId);
});

test("unique: completedForMs holds the key after the ack; the duplicate's state is then completed", async () => {
  const q = "uniq-completed";
  const req = { queue: q, jobType: "digest", unique: { key: "digest-1", completedForMs: 600_000 } };
  const first = await client.enqueue(req);
  const [d] = await client.reserve(q);
  assert.equal(d!.ctx.jobId, first.jobId);
  await client.ack(d!.ctx);
  const again = await client.enqueue(req);
  assert.equal(again.duplicate, true);
  assert.equal(again.jobId, first.jobId);
  assert.equal(again.state, "completed");
});

test("unique and ttl: bad options are refused client-side (and by the server) naming the field", async () => {
  const q = "uniq-bad";
  const cases: [Parameters<SeppClient["enqueue"]>[0], string][] = [
    [{ queue: q, jobType: "t", ttlMs: -1 }, "ttl_ms"],
    [{ queue: q, jobType: "t", ttlMs: 0.5 }, "ttl_ms"],
    [{ queue: q, jobType: "t", ttlMs: Number.NaN }, "ttl_ms"],
    [{ queue: q, jobType: "t", unique: { key: "k", completedForMs: -1000 } }, "unique.completed_for_ms"],
    [{ queue: q, jobType: "t", expiresAt: new Date(Number.NaN) }, "expires_at"],
  ];
  for (const [req, field] of cases) {
    const e = await client.enqueue(req).then(
      () => assert.fail(`${JSON.stringify(req)} resolved`),
      (x: unknown) => x,
    );
    assert.ok(e instanceof InvalidArgumentError, `${field}: ${String(e)}`);
    assert.equal(e.field, field);
  }
  const [b] = await client.enqueueBatch([{ queue: q, jobType: "t", ttlMs: -5 }]);
  assert.ok(b && !b.ok && b.error instanceof InvalidArgumentError);
  assert.equal(b.error.field, "jobs[0].ttl_ms");

  // What only the server knows: its now, and the queue's rules.
  const past = await client.enqueue({ queue: q, jobType: "t", expiresAt: new Date(Date.now() - 60_000) }).then(
    () => assert.fail("an expiresAt in the past was accepted"),
    (x: unknown) => x,
  );
  assert.ok(past instanceof InvalidArgumentError, String(past));
  assert.equal(past.field, "expires_at");
  const both = await client.enqueue({ queue: q, jobType: "t", unique: { key: "k", fields: ["tenant"] } }).then(
    () => assert.fail("unique.key with unique.fields was accepted"),
    (x: unknown) => x,
  );
  assert.ok(both instanceof InvalidArgumentError, String(both));
  assert.equal(both.field, "unique.fields");
  // Nothing was added by any of them.
  assert.deepEqual(await client.reserve(q, { max: 10 }), []);
});

test("expiry: a job with a short ttl that nobody reserves is dead-lettered with the cause expired", async () => {
  const q = "expiry";
  const r = await client.enqueue({ queue: q, jobType: "quote", payload: "p", ttlMs: 300 });
  const j = await client.getJob(r.jobId);
  assert.ok(j.expiresAt instanceof Date, "the job shows its deadline");
  assert.ok(j.enqueuedAt instanceof Date);
  const ttl = j.expiresAt.getTime() - j.enqueuedAt.getTime();
  assert.ok(ttl >= 299 && ttl <= 301, `deadline ${ttl} ms after the enqueue, want 300`);
  // A job with a far deadline in the same queue stays.
  const keep = await client.enqueue({ queue: q, jobType: "quote", expiresAt: new Date(Date.now() + 3_600_000) });

  await waitFor("the job to expire", async () => (await client.getJob(r.jobId)).state === "dead", 20_000);
  const recs = await client.drainDeadLetters(q, 10);
  assert.equal(recs.length, 1);
  assert.equal(recs[0]!.jobId, r.jobId);
  assert.equal(recs[0]!.cause, "expired");
  assert.equal(recs[0]!.finalAttempt, 0);

  const [d, ...rest] = await client.reserve(q, { max: 10 });
  assert.equal(rest.length, 0);
  assert.equal(d!.ctx.jobId, keep.jobId, "only the job with the far deadline is left to deliver");
  await client.ack(d!.ctx);
});

test("schedules: an interval schedule fires jobs a reserve receives; get and list show it", async () => {
  const q = "sched-fire";
  const name = "ts-heartbeat";
  const created = await client.createSchedule({
    name,
    intervalMs: 1000,
    template: { queue: q, jobType: "ping", payload: '{"n":1}', priority: 7, custom: { tenant: "acme" }, maxAttempts: 3 },
    overlap: "allow",
  });
  try {
    assert.equal(created.name, name);
    assert.equal(created.intervalMs, 1000);
    assert.equal(created.cron, "");
    assert.equal(created.overlap, "allow");
    assert.equal(created.catchUp, "once");
    assert.equal(created.paused, false);
    assert.equal(created.template.queue, q);
    assert.equal(text(created.template.payload), '{"n":1}');
    assert.equal(created.template.priority, 7);
    assert.equal(created.template.maxAttempts, 3);
    assert.deepEqual(created.template.custom, { tenant: "acme" });
    assert.ok(created.createdAt instanceof Date);
    assert.ok(created.nextFireTimes.length >= 1);
    assert.equal(created.nextFireTimes[0]!.getTime() % 1000, 0, "interval ticks fall on multiples of it");

    const [d] = await client.reserve(q, { waitMs: 5_000 });
    assert.ok(d, "a tick's job reached the reserve");
    assert.equal(d.job.jobType, "ping");
    assert.equal(text(d.job.payload), '{"n":1}');
    assert.equal(d.job.priority, 7);
    assert.equal(d.ctx.maxAttempts, 3);
    assert.equal(d.job.custom.tenant, "acme");
    assert.equal(d.job.custom.sepp_schedule, name);
    assert.match(d.job.custom.sepp_schedule_tick ?? "", /^\d+$/);
    await client.ack(d.ctx);

    const got = await client.getSchedule(name, { nextFireTimes: 3 });
    assert.ok(got.fired >= 1, `fired ${got.fired}`);
    assert.ok(got.lastFireTime instanceof Date);
    assert.notEqual(got.lastJobId, "0");
    assert.equal(got.nextFireTimes.length, 3);
    for (let i = 1; i < 3; i++) {
      assert.equal(got.nextFireTimes[i]!.getTime() - got.nextFireTimes[i - 1]!.getTime(), 1000);
    }
    assert.ok(got.nextFireTimes[0]! > got.lastFireTime);
    assert.equal((await client.getSchedule(name)).nextFireTimes.length, 5, "the server's default is 5");

    const all = await client.listSchedules({ nextFireTimes: 2 });
    const mine = all.find((s) => s.name === name);
    assert.ok(mine, `listed: ${all.map((s) => s.name).join(", ")}`);
    assert.equal(mine.nextFireTimes.length, 2);
    assert.equal(mine.template.queue, q);
  } finally {
    await client.deleteSchedule(name);
  }
});

test("schedules: pause stops the ticks (no next fire, fired stays), resume restarts, update keeps the paused state, delete removes", async () => {
  const q = "sched-life";
  const name = "ts-life";
  await client.createSchedule({ name, intervalMs: 1000, template: { queue: q, jobType: "tick" }, overlap: "allow" });
  // Wait for a first tick, so pausing stops a schedule that did fire.
  await waitFor("a first tick", async () => (await client.getSchedule(name)).fired >= 1, 10_000);

  const paused = await client.pauseSchedule(name);
  assert.equal(paused.paused, true);
  assert.deepEqual(paused.nextFireTimes, [], "a paused schedule has no next fire time");
  const firedAtPause = paused.fired;
  const again = await client.pauseSchedule(name);
  assert.equal(again.paused, true, "pausing twice is pausing");
  // What the schedule fired before the pause is on the queue; nothing after.
  const waiting = await client.reserve(q, { max: 100 });
  assert.ok(waiting.length >= 1 && waiting.length <= firedAtPause, `${waiting.length} jobs for ${firedAtPause} fired ticks`);
  await client.ackBatch(waiting.map((d) => d.ctx));
  // Longer than two intervals: a running schedule would have fired twice.
  assert.deepEqual(await client.reserve(q, { waitMs: 2_500 }), [], "no job while paused");
  const still = await client.getSchedule(name);
  assert.equal(still.paused, true);
  assert.equal(still.fired, firedAtPause, "no tick fired while paused");
  assert.deepEqual(still.nextFireTimes, []);

  // update replaces the definition and keeps the paused state.
  const updated = await client.updateSchedule({
    name,
    cron: "*/2 * * * * *",
    timeZone: "Europe/Berlin",
    template: { queue: q, jobType: "tock", payload: "v2" },
    catchUp: "skip",
  });
  assert.equal(updated.cron, "*/2 * * * * *");
  assert.equal(updated.intervalMs, 0);
  assert.equal(updated.timeZone, "Europe/Berlin");
  assert.equal(updated.template.jobType, "tock");
  assert.equal(updated.overlap, "skip");
  assert.equal(updated.catchUp, "skip");
  assert.equal(updated.paused, true, "update keeps the paused state");
  assert.equal(updated.fired, firedAtPause, "update keeps the counters");
  assert.ok(updated.updatedAt instanceof Date && updated.createdAt instanceof Date && updated.updatedAt >= updated.createdAt);

  const resumed = await client.resumeSchedule(name);
  assert.equal(resumed.paused, false);
  assert.ok(resumed.nextFireTimes.length >= 1, "a resumed schedule has a next fire time");
  assert.equal(resumed.nextFireTimes[0]!.getUTCSeconds() % 2, 0, "the new cron spec computes the ticks");
  const [d] = await client.reserve(q, { waitMs: 6_000 });
  assert.ok(d, "the resumed schedule fired");
  assert.equal(d.job.jobType, "tock", "with the updated template");
  assert.equal(text(d.job.payload), "v2");
  await client.ack(d.ctx);

  await client.deleteSchedule(name);
  await assert.rejects(client.getSchedule(name), NotFoundError);
  await assert.rejects(client.deleteSchedule(name), NotFoundError);
  await assert.rejects(client.pauseSchedule(name), NotFoundError);
  assert.equal((await client.listSchedules()).find((s: Schedule) => s.name === name), undefined);
  await assert.rejects(
    client.updateSchedule({ name, intervalMs: 1000, template: { queue: q, jobType: "tick" } }),
    NotFoundError,
  );
});

test("schedules: a bad definition is InvalidArgumentError naming the field; a taken name AlreadyExistsError", async () => {
  const template = { queue: "sched-bad", jobType: "t" };
  const cases: [Parameters<SeppClient["createSchedule"]>[0], string][] = [
    [{ name: "bad-cron", cron: "not a cron", template }, "cron"],
    [{ name: "bad-interval", intervalMs: 500, template }, "interval"],
    [{ name: "bad-negative", intervalMs: -1000, template }, "interval"],
    [{ name: "bad-both", cron: "* * * * *", intervalMs: 1000, template }, "interval"],
    [{ name: "bad-neither", template }, "cron"],
    [{ name: "bad-zone", cron: "0 3 * * *", timeZone: "Mars/Olympus_Mons", template }, "time_zone"],
    [{ name: "bad-queue", intervalMs: 1000, template: { queue: "", jobType: "t" } }, "template.queue"],
    [{ name: "", intervalMs: 1000, template }, "name"],
  ];
  for (const [def, field] of cases) {
    const e = await client.createSchedule(def).then(
      () => assert.fail(`${def.name}: created`),
      (x: unknown) => x,
    );
    assert.ok(e instanceof InvalidArgumentError, `${def.name}: ${String(e)}`);
    assert.equal(e.field, field, `${def.name}: ${e.message}`);
  }
  assert.equal((await client.listSchedules()).filter((s) => s.name.startsWith("bad-")).length, 0, "none was created");

  const name = "ts-taken";
  await client.createSchedule({ name, cron: "@daily", template, paused: true });
  try {
    const taken = await client.createSchedule({ name, intervalMs: 1000, template }).then(
      () => assert.fail("a second schedule of one name was created"),
      (x: unknown) => x,
    );
    assert.ok(taken instanceof AlreadyExistsError, String(taken));
    assert.ok(!(taken instanceof UniqueConflictError));
    const s = await client.getSchedule(name);
    assert.equal(s.cron, "@daily", "the first definition stands");
    assert.equal(s.paused, true, "created paused");
    assert.deepEqual(s.nextFireTimes, []);
  } finally {
    await client.deleteSchedule(name);
  }
});
