// Failover: the leader process is killed (SIGKILL) while a producer and a
// Worker run against the cluster. Every job the producer was told is
// enqueued is handled exactly once: none lost, none duplicated.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { DevCluster, waitFor } from "./cluster.js";
import { SeppClient, Worker } from "../src/index.js";

let cluster: DevCluster;

before(
  async () => {
    cluster = await DevCluster.start();
  },
  { timeout: 120_000 },
);

after(
  async () => {
    await cluster?.stop();
  },
  { timeout: 60_000 },
);

test("leader killed under a producer and a Worker: 0 lost, 0 duplicated", { timeout: 180_000 }, async () => {
  const N = 400;
  const producerClient = await SeppClient.connect(cluster.urls);
  const workerClient = await SeppClient.connect(cluster.urls);
  const handled = new Map<number, string[]>(); // seq → job ids of its deliveries
  const workerErrors: unknown[] = [];
  const worker = new Worker(workerClient, { concurrency: 8, waitMs: 1_000, onError: (e) => workerErrors.push(e) });
  worker.handle("failover", "", async (d) => {
    const seq = Number(new TextDecoder().decode(d.job.payload));
    const ids = handled.get(seq) ?? [];
    ids.push(d.ctx.jobId);
    handled.set(seq, ids);
    await new Promise((r) => setTimeout(r, 2));
  });
  worker.start();

  const producer = producerClient.producer({ lingerMs: 2 });
  const results: Promise<string>[] = [];
  const killAt = Math.floor(N / 3);
  let killed = -1;
  for (let i = 0; i < N; i++) {
    results.push(producer.enqueue({ queue: "failover", jobType: "t", payload: String(i) }).then((r) => r.jobId));
    if (i === killAt) {
      killed = await cluster.leaderIndex();
      await cluster.kill(killed);
    }
    if (i % 4 === 3) await new Promise((r) => setTimeout(r, 10));
  }
  const settled = await Promise.allSettled(results);
  await producer.close();
  const failed = settled.flatMap((s, i) => (s.status === "rejected" ? [`${i}: ${String(s.reason)}`] : []));
  assert.deepEqual(failed, [], "every enqueue succeeded through the failover");
  const newLeader = await cluster.leaderIndex();
  assert.notEqual(newLeader, killed, "a surviving node leads");

  await waitFor(`the worker to handle all ${N} jobs`, () => handled.size === N, 90_000);
  // A moment more, for a redelivery (a duplicate) to show if there is one.
  await new Promise((r) => setTimeout(r, 1_500));
  assert.equal(await worker.stop(), true, "stopped gracefully");

  const enqueuedIds = settled.map((s) => (s.status === "fulfilled" ? s.value : ""));
  const lost = enqueuedIds.flatMap((_, i) => (handled.has(i) ? [] : [i]));
  const duplicated = [...handled].filter(([, ids]) => ids.length !== 1).map(([seq, ids]) => `${seq}: ${ids.join(",")}`);
  const wrongJob = [...handled].filter(([seq, ids]) => ids[0] !== enqueuedIds[seq]).map(([seq]) => seq);
  assert.deepEqual(lost, [], "lost jobs");
  assert.deepEqual(duplicated, [], "jobs handled more than once");
  assert.deepEqual(wrongJob, [], "handled a job id other than the one enqueued");
  assert.equal(new Set(enqueuedIds).size, N, "one job per enqueue");
  // Nothing is left behind on the queue.
  assert.deepEqual(await workerClient.reserve("failover", { max: 10 }), []);
  producerClient.close();
  workerClient.close();
});
