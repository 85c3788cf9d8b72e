import { SeppClient, checkProgress } from "./client.js";
import { InvalidArgumentError, JobCancelledError, LeaseLostError, NotFoundError, UnavailableError, UnknownOutcomeError, WrongStateError } from "./errors.js";
import { Delivery, EnqueueRequest, Progress, RetryDirective } from "./types.js";
import { newKey } from "./random.js";

/**
 * A handler runs one delivery. Resolving acks the job; throwing nacks it:
 * with retry(err) / a plain error the queue's retry policy decides,
 * retryAfter(ms, err) asks for a delay, permanent(err) dead-letters it.
 * `signal` aborts when the lease is lost (another worker may have the job
 * now: stop touching it) or when stop() runs out of time.
 *
 * Resolving with a Uint8Array (a Buffer is one) completes the job with
 * that result (the Go client's Delivery.SetResult): the worker acks with
 * ackWithResult, so wait and getJob return it. Resolving with nothing (or
 * an empty array) acks without one. The job's queue must keep completed
 * jobs (completedRetentionMs) and the result be at most the server's
 * max_result_bytes; see WorkerOptions.onError for a refused result.
 *
 * Resolving with a Completion ({ result?, followUps }) also enqueues
 * followUps with the ack, in the same log entry (ackWithFollowUps): all or
 * nothing, fenced by the lease, so a handler whose lease was lost enqueues
 * none. Follow-ups the server refuses leave the job uncompleted: the
 * refusal reaches onError and the job is nacked to run again by its queue's
 * retry policy, as the Go worker does.
 *
 * The delivery a Worker hands its handler is a WorkerDelivery: its
 * progress(percent, message) reports how far the job is. A handler typed
 * with a plain Delivery still fits.
 *
 * A job enqueued after others (EnqueueRequest.after) has them, and how each
 * ended, in delivery.job.parents; client.parentResults(parents) reads their
 * results.
 */
export type Handler = (delivery: WorkerDelivery, signal: AbortSignal) => Promise<Uint8Array | Completion | void> | Uint8Array | Completion | void;

/**
 * What a handler may resolve with to complete its job with more than a
 * result: the result (optional, as a plain Uint8Array is one) and the
 * follow-ups enqueued with the ack. Give each follow-up an idempotencyKey
 * when a rerun must not enqueue it twice. A follow-up may wait for earlier
 * ones (EnqueueRequest.after: their indexes in followUps).
 */
export interface Completion {
  result?: Uint8Array;
  followUps: EnqueueRequest[];
}

function isCompletion(v: unknown): v is Completion {
  return typeof v === "object" && v !== null && !(v instanceof Uint8Array) && Array.isArray((v as { followUps?: unknown }).followUps);
}

/**
 * The Delivery a Worker hands its handler: the job and its context, and a
 * way to report the job's progress.
 */
export interface WorkerDelivery extends Delivery {
  /**
   * Reports the job's progress (percent 0..100, message at most 256 bytes
   * of UTF-8, default ""): getJob, listJobs and wait show it
   * (Job.progress) until the delivery ends. It never blocks nor calls the
   * server: the report rides on the worker's next lease extension, which
   * it brings forward (to at most one extension per
   * WorkerOptions.progressIntervalMs, by default a second); of reports
   * made in between only the latest is sent.
   *
   * Out of bounds it throws an InvalidArgumentError naming progress.percent
   * or progress.message, and nothing is sent. A report the server refuses
   * (a WrongStateError while some cluster member does not keep progress
   * yet) is dropped, the lease extended without it, and the refusal passed
   * to onError once per delivery.
   */
  progress(percent: number, message?: string): void;
}

export type HandlerErrorKind = "retry" | "retry_after" | "permanent";

/** What a handler throws to say how its failure is retried. */
export class HandlerError extends Error {
  override name = "HandlerError";
  constructor(
    readonly kind: HandlerErrorKind,
    readonly error: unknown,
    /** With "retry_after": the delay in milliseconds. */
    readonly delayMs = 0,
  ) {
    // The message is the nack reason: the handler's own words, as the Go
    // client sends them.
    super(`${error instanceof Error ? error.message : String(error)}${kind === "retry_after" ? ` (retry after ${delayMs} ms)` : ""}`);
    (this as { cause?: unknown }).cause = error;
  }
  /** The nack directive this failure maps onto. */
  directive(): RetryDirective {
    switch (this.kind) {
      case "retry_after":
        return RetryDirective.after(this.delayMs);
      case "permanent":
        return RetryDirective.deadLetter();
    }
    return RetryDirective.default();
  }
}

/** Retry on the queue's retry policy. */
export function retry(error: unknown): HandlerError {
  return new HandlerError("retry", error);
}

/** Retry no sooner than delayMs from now. */
export function retryAfter(delayMs: number, error: unknown): HandlerError {
  return new HandlerError("retry_after", error, delayMs);
}

/** Dead-letter the job: no more attempts. */
export function permanent(error: unknown): HandlerError {
  return new HandlerError("permanent", error);
}

export interface WorkerOptions {
  /** Names the worker in job listings and attempt history (default random). */
  workerId?: string;
  /** Handlers running at once across all queues (default 10). */
  concurrency?: number;
  /** Lease asked for on each job, ms (default 30 000); extended every lease/3
   * while the handler runs. */
  leaseMs?: number;
  /** Long-poll wait of each reserve, ms (default 5 000; the server caps it). */
  waitMs?: number;
  /** Jobs asked for in one reserve (default 16). */
  maxReserve?: number;
  /** Failures the worker handles itself (reserve errors, a lost lease, an
   * ack that failed); default: console.warn. A handler whose job an
   * operator cancelled is reported as a JobCancelledError (and its signal's
   * reason is one), a lost lease as a LeaseLostError.
   *
   * A handler's result the server refuses comes here as the typed error,
   * as with the Go worker: a WrongStateError (the queue keeps no completed
   * jobs, or the cluster is not yet upgraded; the lease is still held) is
   * followed by an ack without the result, so the job ran once and is not
   * run again; any other failure of that ack (an InvalidArgumentError over
   * max_result_bytes, a LeaseLostError, ...) leaves the job unacked, and it
   * is delivered again once its lease expires. A handler that resolves with
   * anything but a Uint8Array, undefined or null is reported as a TypeError and
   * its job acked without a result. */
  onError?: (err: unknown) => void;
  /** Truncates the nack reason built from a handler's error (default 1024). */
  maxReasonBytes?: number;
  /** Runs each handler (await run()) inside what a tracing library needs:
   * a span whose parent is delivery.job.traceContext, say. It must await
   * run() once and let its error through. See docs/tracing.md. */
  aroundHandler?: (delivery: Delivery, run: () => Promise<void>) => Promise<void>;
  /** The least time between two lease extensions that a handler's
   * WorkerDelivery.progress brings forward, ms (default 1 000). */
  progressIntervalMs?: number;
}

/** Carries a handler's reports (WorkerDelivery.progress) to the lease
 * keeper: the latest report not yet sent, whether a refusal was reported
 * (once per delivery), and the keeper's wake-up. */
interface ProgressBox {
  pending?: Progress;
  refused: boolean;
  wake?: () => void;
}

class LeaseLost extends Error {
  override name = "LeaseLost";
}
class Stopping extends Error {
  override name = "Stopping";
}

/**
 * Reserves jobs from the queues it has handlers for and runs them, up to
 * concurrency at a time. It extends a running job's lease, acks on success
 * (with the result a handler resolved with, if any), nacks on failure
 * (mapping HandlerError onto the directive), and on stop
 * finishes running handlers and hands back jobs it holds but has not
 * started.
 */
export class Worker {
  readonly id: string;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private readonly maxReserve: number;
  private readonly maxReasonBytes: number;
  private readonly progressIntervalMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly handlers = new Map<string, Map<string, Handler>>();
  private started = false;
  private stopped = false;
  private free: number;
  private slotWaiters: (() => void)[] = [];
  private readonly polling = new AbortController();
  private readonly handlerAbort = new Set<AbortController>();
  private pollers: Promise<void>[] = [];
  private readonly running = new Set<Promise<void>>();
  private readonly aroundHandler: WorkerOptions["aroundHandler"];

  constructor(
    private readonly client: SeppClient,
    opts: WorkerOptions = {},
  ) {
    this.id = opts.workerId || `ts-worker-${newKey().slice(0, 8)}`;
    this.concurrency = opts.concurrency ?? 10;
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.waitMs = opts.waitMs ?? 5_000;
    this.maxReserve = opts.maxReserve ?? 16;
    this.maxReasonBytes = opts.maxReasonBytes ?? 1024;
    this.progressIntervalMs = opts.progressIntervalMs !== undefined && opts.progressIntervalMs > 0 ? opts.progressIntervalMs : 1_000;
    this.aroundHandler = opts.aroundHandler;
    this.onError = opts.onError ?? ((err) => console.warn("sepp worker:", err));
    this.free = this.concurrency;
  }

  /**
   * Registers handler for jobs of jobType on queue; jobType "" handles every
   * type of the queue without a handler of its own. A job whose type has no
   * handler is nacked with a reason saying so. Call before start().
   */
  handle(queue: string, jobType: string, handler: Handler): this {
    if (this.started) throw new Error("sepp: Worker.handle called after start");
    if (!queue) throw new Error("sepp: Worker.handle needs a queue");
    let byType = this.handlers.get(queue);
    if (!byType) this.handlers.set(queue, (byType = new Map()));
    byType.set(jobType, handler);
    return this;
  }

  /** Begins reserving from every queue with a handler. */
  start(): void {
    if (this.started) throw new Error("sepp: worker already started");
    if (this.handlers.size === 0) throw new Error("sepp: worker has no handlers; call handle before start");
    this.started = true;
    for (const queue of this.handlers.keys()) this.pollers.push(this.poll(queue));
  }

  /**
   * Starts, runs until signal aborts, then stops gracefully within
   * shutdownTimeoutMs (default 30 000).
   */
  async run(signal: AbortSignal, shutdownTimeoutMs = 30_000): Promise<boolean> {
    this.start();
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    return this.stop(shutdownTimeoutMs);
  }

  /**
   * Stops reserving, releases jobs reserved but not started, and waits for
   * running handlers to finish and be answered. If timeoutMs passes first,
   * the handlers' signals abort, their jobs are released (no attempt is
   * burned) once they return, and it resolves to false; else to true.
   * Handlers must honour their signal for stop to end.
   */
  async stop(timeoutMs = 30_000): Promise<boolean> {
    if (!this.started || this.stopped) return true;
    this.stopped = true;
    this.polling.abort();
    this.slotWaiters.splice(0).forEach((w) => w());
    await Promise.all(this.pollers);
    const all = Promise.all([...this.running]).then(() => true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const graceful = await Promise.race([all, timedOut]);
    clearTimeout(timer);
    if (!graceful) {
      for (const c of this.handlerAbort) c.abort(new Stopping("worker stopping"));
      await Promise.all([...this.running]);
    }
    return graceful;
  }

  private report(err: unknown): void {
    try {
      this.onError(err);
    } catch {
      // The reporter's own failure must not stop the worker.
    }
  }

  private async takeSlots(): Promise<number> {
    while (this.free === 0) {
      if (this.polling.signal.aborted) return 0;
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
    if (this.polling.signal.aborted) return 0;
    const n = Math.min(this.free, this.maxReserve);
    this.free -= n;
    return n;
  }

  private freeSlots(n: number): void {
    this.free += n;
    this.slotWaiters.splice(0).forEach((w) => w());
  }

  private async poll(queue: string): Promise<void> {
    let requestId = "";
    let failures = 0;
    for (;;) {
      const held = await this.takeSlots();
      if (held === 0) return;
      if (!requestId) requestId = newKey();
      const opts = { workerId: this.id, max: held, leaseMs: this.leaseMs, waitMs: this.waitMs, requestId };
      let ds: Delivery[] = [];
      let err: unknown;
      try {
        ds = await this.client.reserve(queue, { ...opts, signal: this.polling.signal });
      } catch (e) {
        err = e;
      }
      if (this.polling.signal.aborted) {
        // Stopping. A reserve cut short may still have leased jobs: ask
        // again with the same request id (which returns those deliveries
        // rather than new ones, if it applied) and hand back everything.
        if (err) ds = await this.recoverReserve(queue, opts);
        await this.releaseAll(ds);
        this.freeSlots(held);
        return;
      }
      if (err) {
        this.report(err);
        if (!(err instanceof UnknownOutcomeError) && !(err instanceof UnavailableError)) requestId = "";
        this.freeSlots(held);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(5 * 2 ** failures, 1000));
          this.polling.signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
        });
        failures++;
        continue;
      }
      failures = 0;
      requestId = "";
      for (const d of ds) {
        const p = this.runOne(d).finally(() => {
          this.running.delete(p);
          this.freeSlots(1);
        });
        this.running.add(p);
      }
      this.freeSlots(held - ds.length);
    }
  }

  private async recoverReserve(queue: string, opts: { workerId: string; max: number; leaseMs: number; requestId: string }): Promise<Delivery[]> {
    try {
      return await this.client.reserve(queue, { ...opts, waitMs: 0 });
    } catch (e) {
      this.report(new Error(`sepp worker: stopping: could not settle a reserve cut short (its jobs come back when their leases expire): ${String(e)}`));
      return [];
    }
  }

  private async releaseAll(ds: Delivery[]): Promise<void> {
    for (const d of ds) {
      try {
        await this.client.release(d.ctx);
      } catch (e) {
        this.report(e);
      }
    }
  }

  private handlerFor(d: Delivery): Handler | undefined {
    const byType = this.handlers.get(d.ctx.queue) ?? this.handlers.get(d.job.queue);
    return byType?.get(d.job.jobType) ?? byType?.get("");
  }

  private async runOne(d: Delivery): Promise<void> {
    if (!d.ctx.queue) d.ctx.queue = d.job.queue;
    const h = this.handlerFor(d);
    if (!h) {
      await this.nack(d, RetryDirective.default(), `no handler registered for job type "${d.job.jobType}" on queue "${d.ctx.queue}"`);
      return;
    }
    const ctl = new AbortController();
    this.handlerAbort.add(ctl);
    const box: ProgressBox = { refused: false };
    const wd: WorkerDelivery = {
      ...d,
      progress: (percent: number, message = "") => {
        checkProgress("progress", percent, message);
        box.pending = { percent, message };
        box.wake?.();
      },
    };
    const keeper = this.keepLease(d, ctl, box);
    let err: unknown;
    let failed = false;
    let result: unknown;
    try {
      if (this.aroundHandler) {
        await this.aroundHandler(wd, async () => {
          result = await h(wd, ctl.signal);
        });
      } else {
        result = await h(wd, ctl.signal);
      }
    } catch (e) {
      failed = true;
      err = e;
    }
    keeper.stop();
    await keeper.done;
    this.handlerAbort.delete(ctl);
    const reason = (ctl.signal as { reason?: unknown }).reason;
    if (reason instanceof JobCancelledError) {
      this.report(new JobCancelledError("worker", "failed_precondition", `job ${d.ctx.jobId}: cancelled by an operator while its handler ran; not answering for it`));
      return;
    }
    if (reason instanceof LeaseLost) {
      this.report(new LeaseLostError("worker", "failed_precondition", `job ${d.ctx.jobId}: lease lost while its handler ran; not answering for it`));
      return;
    }
    if (!failed) {
      if (isCompletion(result)) {
        if (result.followUps.length > 0) {
          await this.ackWithFollowUps(d, result);
          return;
        }
        result = result.result;
      }
      if (result instanceof Uint8Array && result.length > 0) {
        await this.ackWithResult(d, result);
        return;
      }
      if (result !== undefined && result !== null && !(result instanceof Uint8Array)) {
        this.report(new TypeError(`sepp worker: job ${d.ctx.jobId}: handler resolved with ${typeof result}, not a Uint8Array or nothing; acking without a result`));
      }
      try {
        await this.client.ack(d.ctx);
      } catch (e) {
        this.report(e);
      }
      return;
    }
    if (reason instanceof Stopping) {
      // The handler gave up because stop ran out of time, not because the
      // job failed: hand it back without burning the attempt.
      await this.releaseAll([d]);
      return;
    }
    const directive = err instanceof HandlerError ? err.directive() : RetryDirective.default();
    const text = err instanceof Error ? err.message : String(err);
    await this.nack(d, directive, text);
  }

  /**
   * Acks d with its handler's result. A refusal (WrongStateError: the
   * queue keeps no completed jobs, or the cluster is not upgraded) left the
   * lease held: the job ran, so it is acked without the result rather than
   * run again, and the refusal is reported, as the Go worker does. Any
   * other failure is reported as it came; the job then comes back when its
   * lease expires.
   */
  private async ackWithResult(d: Delivery, result: Uint8Array): Promise<void> {
    try {
      await this.client.ackWithResult(d.ctx, result);
      return;
    } catch (e) {
      this.report(e);
      if (!(e instanceof WrongStateError)) return;
    }
    try {
      await this.client.ack(d.ctx);
    } catch (e) {
      this.report(e);
    }
  }

  /**
   * Acks d with its handler's result and follow-ups in one call. A result
   * the queue does not keep (WrongStateError) is reported and the
   * follow-ups sent without it. Follow-ups the server refuses left the
   * lease held and nothing applied: the job is not done without them, so
   * the refusal is reported and the job nacked to run again. A lost lease
   * or an unknown outcome is reported as it came.
   */
  private async ackWithFollowUps(d: Delivery, c: Completion): Promise<void> {
    let result = c.result;
    for (;;) {
      try {
        await this.client.ackWithFollowUps(d.ctx, c.followUps, result);
        return;
      } catch (e) {
        this.report(e);
        if (e instanceof WrongStateError && result && result.length > 0) {
          result = undefined; // the result refused: the follow-ups without it
          continue;
        }
        if (e instanceof LeaseLostError || e instanceof UnknownOutcomeError || e instanceof UnavailableError) return;
        const text = e instanceof Error ? e.message : String(e);
        await this.nack(d, RetryDirective.default(), `follow-ups refused: ${text}`);
        return;
      }
    }
  }

  private async nack(d: Delivery, directive: RetryDirective, reason: string): Promise<void> {
    const r = reason.length > this.maxReasonBytes ? reason.slice(0, this.maxReasonBytes) : reason;
    try {
      await this.client.nack(d.ctx, directive, r);
    } catch (e) {
      this.report(e);
    }
  }

  /**
   * Extends one lease, with the handler's pending progress report if it has
   * one. A report the server refuses (WrongStateError: it keeps no
   * progress yet; InvalidArgumentError: out of its bounds) is dropped, the
   * refusal reported once per delivery, and the lease extended without it;
   * a report whose extension failed otherwise is kept for the next one
   * unless a newer one came.
   */
  private async extendOnce(d: Delivery, box: ProgressBox, signal: AbortSignal): Promise<void> {
    const p = box.pending;
    box.pending = undefined;
    if (!p) {
      await this.client.extendLease(d.ctx, this.leaseMs, { signal });
      return;
    }
    try {
      await this.client.reportProgress(d.ctx, p.percent, p.message, this.leaseMs, { signal });
      return;
    } catch (e) {
      if (!(e instanceof WrongStateError || e instanceof InvalidArgumentError)) {
        if (!box.pending) box.pending = p;
        throw e;
      }
      if (!box.refused) {
        box.refused = true;
        this.report(e);
      }
    }
    await this.client.extendLease(d.ctx, this.leaseMs, { signal });
  }

  /**
   * Extends the delivery's lease every lease/3 until stopped, carrying the
   * handler's latest progress report when there is one; a report brings the
   * next extension forward, to no sooner than progressIntervalMs after the
   * last. A lease the server reports lost, or one that lapsed by the local
   * clock while extensions kept failing, aborts the handler with LeaseLost;
   * one an operator's cancel revoked, with the JobCancelledError the
   * server's answer became.
   */
  private keepLease(d: Delivery, ctl: AbortController, box: ProgressBox): { stop: () => void; done: Promise<void> } {
    const interval = this.leaseMs / 3;
    let deadline = Date.now() + this.leaseMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let due = 0; // when the armed timer fires
    let last = Date.now(); // of the last extension (the reserve, at first)
    let extending = false;
    let stopped = false;
    let inFlight: Promise<void> = Promise.resolve();
    const extender = new AbortController();
    const arm = (delay: number) => {
      if (box.pending) delay = Math.min(delay, Math.max(last + this.progressIntervalMs - Date.now(), 0));
      due = Date.now() + delay;
      timer = setTimeout(tick, delay);
    };
    box.wake = () => {
      // An extension in flight re-arms when it is done.
      if (stopped || extending || timer === undefined || ctl.signal.aborted) return;
      const at = Math.max(last + this.progressIntervalMs, Date.now());
      if (at < due) {
        clearTimeout(timer);
        arm(at - Date.now());
      }
    };
    const tick = () => {
      timer = undefined;
      extending = true;
      inFlight = (async () => {
        try {
          await this.extendOnce(d, box, extender.signal);
          deadline = Date.now() + this.leaseMs;
        } catch (e) {
          if (stopped) return;
          if (e instanceof JobCancelledError) {
            ctl.abort(e);
            return;
          }
          // A report's extension names a job gone as NotFound (the plain
          // extension, as LeaseLost): either way the lease is gone.
          if (e instanceof LeaseLostError || e instanceof NotFoundError || Date.now() >= deadline) {
            ctl.abort(new LeaseLost(`lease of job ${d.ctx.jobId} lost: ${String(e)}`));
            return;
          }
          this.report(e);
        } finally {
          extending = false;
          last = Date.now();
        }
        if (!stopped && !ctl.signal.aborted) arm(interval);
      })();
    };
    arm(interval);
    return {
      stop: () => {
        stopped = true;
        box.wake = undefined;
        if (timer) clearTimeout(timer);
        extender.abort();
      },
      get done() {
        return inFlight;
      },
    };
  }
}
