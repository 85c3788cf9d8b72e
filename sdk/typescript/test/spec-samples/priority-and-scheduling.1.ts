import { SeppClient, Priority } from "sepp";

const client = await SeppClient.connect("http://localhost:50051");

// MAX is the highest priority (9); it jumps ahead of anything lower on the queue.
await client.enqueue({
  queue: "emails",
  jobType: "password_reset",
  priority: Priority.MAX,
});
