import { SeppClient } from "sepp";

const client = await SeppClient.connect("http://localhost:50051");

// No "delay" argument: schedule an absolute time, adding to now for a
// relative delay.
const runAt = new Date(Date.now() + 60 * 60 * 1000);
await client.enqueue({
  queue: "reports",
  jobType: "daily_rollup",
  scheduledAt: runAt,
});
