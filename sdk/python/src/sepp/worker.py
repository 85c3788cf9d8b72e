"""Worker: reserves jobs and runs their handlers.

A handler is ``async def handler(delivery: Delivery) -> Optional[bytes]``.
Returning acks the job; raising nacks it: ``Retry`` (or any other exception)
retries per the queue's policy, ``RetryAfter(delta)`` retries once delta
passed, ``Permanent`` dead-letters the job at once. While a handler runs its
lease is extended every lease/3; a lease the server reports lost (another
worker may have the job now) cancels the handler task, and nothing answers
for it.

A handler that returns bytes completes its job with that result (the Go
client's ``Delivery.SetResult``): the worker acks with ``ack_with_result``,
so ``wait_job`` and ``get_job`` return it. Returning ``None`` (or ``b""``)
acks without one. The job's queue must keep completed jobs
(``completed_retention``), and the result be at most the server's
``max_result_bytes``. A result the server refuses reaches ``on_error`` as
the typed exception, as the Go worker does: ``WrongState`` (the queue keeps
no completed jobs, or the cluster is not yet upgraded; the lease is still
held) is followed by a plain ack, so the job ran once and is not run again;
any other failure of the ack (``InvalidField`` over ``max_result_bytes``,
``LeaseLost``, ...) leaves the job unacked, and it is delivered again once
its lease expires.

A handler that returns a ``Completion(result, follow_ups)`` also enqueues
``follow_ups`` with its ack, in the same log entry (``ack_with_follow_ups``):
all or nothing, and fenced by the lease. Follow-ups the server refuses leave
the job uncompleted: the refusal reaches ``on_error`` (typed, with a note)
and the job is nacked to run again by its queue's retry policy, as the Go
worker does; a result the queue does not keep (``WrongState``) is dropped
first, as for a plain result.

A handler reports its job's progress with ``delivery.progress(percent,
message)`` (the Go client's ``Delivery.Progress``): it never blocks, and the
report rides on the worker's next lease extension, which it brings forward
to at most one per ``progress_interval`` (default 1 s); only the latest
report is sent. Out of bounds it raises ``InvalidField`` at the call and
sends nothing. A report the server refuses (``WrongState`` while some
cluster member does not keep progress yet) is dropped, the lease extended
without it, and the refusal reported to ``on_error`` once per delivery.
The server clears the progress when the delivery ends.

A job enqueued after others (``EnqueueRequest.after``) reaches its handler
with its parents in ``delivery.job.parents`` (each one's state, cause and
whether it ended); ``SeppClient.parent_results`` reads their results.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import secrets
import socket
from datetime import timedelta
from typing import Any, Awaitable, Callable, Coroutine, Optional, Union

from sepp.client import SeppClient, new_key
from sepp.errors import (InvalidArgument, JobCancelled, LeaseLost, NotFound, SeppError, Unavailable, UnknownOutcome,
                         WrongState)
from sepp.types import Completion, Delivery, RetryDirective, _ProgressBox

__all__ = ["Worker", "Handler", "HandlerError", "Retry", "RetryAfter", "Permanent"]

log = logging.getLogger("sepp.worker")

#: A handler: its bytes, when it returns some, are the job's result; a
#: Completion carries a result and follow-ups.
Handler = Callable[[Delivery], Coroutine[Any, Any, Union[bytes, Completion, None]]]


class HandlerError(Exception):
    """Tells a Worker how to nack a failed job (see the subclasses)."""

    def directive(self) -> RetryDirective:
        return RetryDirective.default()


class Retry(HandlerError):
    """Another attempt per the queue's retry policy (what any other
    exception does too)."""


class RetryAfter(HandlerError):
    """Another attempt once ``delay`` has passed."""

    def __init__(self, delay: timedelta, message: str = "") -> None:
        super().__init__(f"{message} (retry after {delay})" if message else f"retry after {delay}")
        self.delay = delay

    def directive(self) -> RetryDirective:
        return RetryDirective.after(self.delay)


class Permanent(HandlerError):
    """No more attempts: the job is dead-lettered with cause rejected."""

    def directive(self) -> RetryDirective:
        return RetryDirective.dead_letter()


class Worker:
    """Reserves from every queue it has handlers for and runs up to
    ``concurrency`` handlers at once. ``lease`` is asked for on each job and
    extended while its handler runs; ``wait`` is each reserve's long-poll;
    ``max_reserve`` caps the jobs of one reserve. ``stop()`` stops
    reserving, hands back jobs reserved but not started, and waits up to
    ``shutdown_timeout`` for running handlers (then cancels them and
    releases their jobs, burning no attempt).

    A handler whose lease is gone is cancelled, and ``on_error`` gets why:
    ``JobCancelled`` when an operator cancelled the job, ``LeaseLost`` when
    the lease expired or was taken over (the ``CancelledError``'s message
    says the same: "job cancelled by an operator" or "lease lost").

    A handler that returns bytes completes its job with that result (see
    the module's docstring): a result the server refuses reaches
    ``on_error`` as the typed exception (``WrongState``: then acked
    without it; ``InvalidField`` over ``max_result_bytes``: left unacked,
    delivered again once its lease expires). A handler that returns
    anything else but ``None`` is reported as a ``TypeError`` and its job
    acked without a result.

    ``progress_interval`` is the least time between two lease extensions
    that a handler's ``delivery.progress`` brings forward (default 1 s; see
    the module's docstring)."""

    def __init__(self, client: SeppClient, *, concurrency: int = 10, lease: timedelta = timedelta(seconds=30),
                 wait: timedelta = timedelta(seconds=5), max_reserve: int = 16, worker_id: str = "",
                 shutdown_timeout: timedelta = timedelta(seconds=30),
                 on_error: Optional[Callable[[BaseException], None]] = None, max_reason_bytes: int = 1024,
                 around_handler: Optional[Callable[[Delivery, Callable[[], Awaitable[None]]], Awaitable[None]]] = None,
                 progress_interval: timedelta = timedelta(seconds=1)) -> None:
        self._client = client
        self.id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self._concurrency = max(concurrency, 1)
        self._lease = lease if lease > timedelta(0) else timedelta(seconds=30)
        self._wait = wait if wait > timedelta(0) else timedelta(seconds=5)
        self._max_reserve = max(max_reserve, 1)
        self._shutdown_timeout = shutdown_timeout.total_seconds()
        self._on_error = on_error or (lambda e: log.warning("sepp worker: %s", e))
        self._max_reason = max(max_reason_bytes, 1)
        self._progress_interval = (progress_interval.total_seconds() if progress_interval > timedelta(0) else 1.0)
        # around_handler(delivery, run) runs the handler (await run()) inside
        # what a tracing library needs: a span whose parent is
        # delivery.job.trace_context, say. It must await run() exactly once
        # and let its exception through.
        self._around = around_handler
        self._handlers: dict[str, dict[str, Handler]] = {}
        self._free = self._concurrency
        self._slot_waiters: list[asyncio.Future[None]] = []
        self._pollers: list[asyncio.Task[None]] = []
        self._running: set[asyncio.Task[None]] = set()
        self._started = False
        self._stopped = False

    def handle(self, queue: str, job_type: str, handler: Handler) -> None:
        """Run ``handler`` for jobs of ``job_type`` on ``queue``; an empty
        job_type handles every type of the queue without its own handler.
        A job whose type has no handler is nacked with a reason saying so."""
        if self._started:
            raise RuntimeError("sepp: Worker.handle called after start")
        if not queue:
            raise ValueError("sepp: Worker.handle needs a queue")
        self._handlers.setdefault(queue, {})[job_type] = handler

    def handler(self, queue: str, job_type: str = "") -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`handle`."""
        def register(fn: Handler) -> Handler:
            self.handle(queue, job_type, fn)
            return fn
        return register

    async def __aenter__(self) -> Worker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Begin reserving from every queue with a handler."""
        if self._started:
            raise RuntimeError("sepp: worker already started")
        if not self._handlers:
            raise RuntimeError("sepp: worker has no handlers; call handle before start")
        self._started = True
        loop = asyncio.get_running_loop()
        self._pollers = [loop.create_task(self._poll(q)) for q in self._handlers]

    async def run(self) -> None:
        """Start, run until cancelled, then stop gracefully."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.shield(self.stop())

    async def stop(self) -> None:
        """Stop reserving, release what was reserved but not started, and
        wait for running handlers to be acked or nacked."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        for p in self._pollers:
            p.cancel()
        await asyncio.gather(*self._pollers, return_exceptions=True)
        if self._running:
            _, pending = await asyncio.wait(set(self._running), timeout=self._shutdown_timeout)
            if pending:
                # Out of time: cancel the handlers; their jobs are released.
                for t in pending:
                    t.cancel()
                await asyncio.gather(*pending, return_exceptions=True)

    def _report(self, err: BaseException) -> None:
        try:
            self._on_error(err)
        except Exception:  # a broken callback must not stop the worker
            log.exception("sepp worker: on_error raised")

    async def _take(self, n: int) -> int:
        """Wait for one free slot, then take up to n; returns how many."""
        while self._free == 0:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._slot_waiters.append(fut)
            try:
                await fut
            finally:
                if fut in self._slot_waiters:
                    self._slot_waiters.remove(fut)
        k = min(self._free, n)
        self._free -= k
        return k

    def _give(self, n: int) -> None:
        if n <= 0:
            return
        self._free += n
        while self._slot_waiters:
            fut = self._slot_waiters.pop()
            if not fut.done():
                fut.set_result(None)

    async def _poll(self, queue: str) -> None:
        request_id = ""
        failures = 0
        loop = asyncio.get_running_loop()
        while True:
            held = await self._take(self._max_reserve)
            if not request_id:
                request_id = new_key()
            try:
                ds = await self._client.reserve(queue, max=held, worker_id=self.id, lease=self._lease,
                                                wait=self._wait, request_id=request_id)
            except asyncio.CancelledError:
                # Stopping. A reserve cut short may still have leased jobs:
                # ask again with the same request id (which returns those
                # deliveries if it applied) and hand everything back.
                await asyncio.shield(self._recover(queue, held, request_id))
                raise
            except SeppError as e:
                self._give(held)
                self._report(e)
                if not isinstance(e, (UnknownOutcome, Unavailable)):
                    request_id = ""
                await asyncio.sleep(self._client._backoff(failures))
                failures += 1
                continue
            failures = 0
            request_id = ""
            for d in ds:
                t = loop.create_task(self._run(d))
                self._running.add(t)
                t.add_done_callback(self._running.discard)
            self._give(held - len(ds))

    async def _recover(self, queue: str, held: int, request_id: str) -> None:
        try:
            ds = await asyncio.wait_for(self._client.reserve(queue, max=held, worker_id=self.id, lease=self._lease,
                                                             request_id=request_id), self._lease.total_seconds())
        except (SeppError, asyncio.TimeoutError) as e:
            self._report(SeppError(f"stopping: could not settle a reserve cut short (its jobs come back when "
                                   f"their leases expire): {e}", op="reserve"))
            ds = []
        await self._release_all(ds)
        self._give(held)

    async def _release_all(self, ds: list[Delivery]) -> None:
        for d in ds:
            try:
                await asyncio.wait_for(self._client.release(d.ctx), self._lease.total_seconds())
            except (SeppError, asyncio.TimeoutError) as e:
                self._report(SeppError(f"release job {d.ctx.job_id}: {e}", op="release"))

    def _handler_for(self, d: Delivery) -> Optional[Handler]:
        by_type = self._handlers.get(d.ctx.queue or d.job.queue, {})
        return by_type.get(d.job.job_type) or by_type.get("")

    async def _run(self, d: Delivery) -> None:
        try:
            h = self._handler_for(d)
            if h is None:
                await self._nack(d, RetryDirective.default(),
                                 f"no handler registered for job type {d.job.job_type!r} on queue {d.ctx.queue!r}")
                return
            await self._run_handler(d, h)
        finally:
            self._give(1)

    async def _run_handler(self, d: Delivery, h: Handler) -> None:
        # The handler runs in this task; a lost lease cancels it (see
        # _LeaseKeeper), Stop running out of time cancels it from outside.
        me = asyncio.current_task()
        assert me is not None
        d = dataclasses.replace(d, _progress=_ProgressBox())
        keeper = _LeaseKeeper(self, d, me)
        err: Optional[BaseException] = None
        result: object = None
        try:
            if self._around is not None:
                async def run() -> None:
                    nonlocal result
                    result = await h(d)
                await self._around(d, run)
            else:
                result = await h(d)
        except asyncio.CancelledError as e:
            keeper.stop()
            if keeper.lost is None:
                # Stop ran out of time: hand the job back without burning
                # its attempt.
                await asyncio.shield(self._release_all([d]))
                raise
            err = e
        except Exception as e:
            err = e
        finally:
            keeper.stop()
        if keeper.lost is not None:
            if me.cancelling():
                me.uncancel()  # the keeper's cancel, consumed here
            if isinstance(keeper.lost, JobCancelled):
                self._report(JobCancelled(f"job {d.ctx.job_id}: cancelled by an operator while its handler ran; not "
                                          f"answering for it: {keeper.lost}", op="extend lease"))
            else:
                self._report(LeaseLost(f"job {d.ctx.job_id}: lease lost while its handler ran; not answering for "
                                       f"it: {keeper.lost}", op="extend lease"))
            return
        if err is None:
            if isinstance(result, Completion):
                if result.follow_ups:
                    await self._ack_with_follow_ups(d, result)
                    return
                result = result.result
            if isinstance(result, (bytes, bytearray, memoryview)) and len(result) > 0:
                await self._ack_with_result(d, bytes(result))
                return
            if result is not None and not isinstance(result, (bytes, bytearray, memoryview)):
                self._report(TypeError(f"sepp worker: job {d.ctx.job_id}: handler returned "
                                       f"{type(result).__name__}, not bytes or None; acking without a result"))
            # Bounded by the client's retry_timeout; no wait_for (a task and
            # a timer per job) on the hot path.
            try:
                await self._client.ack(d.ctx)
            except SeppError as e:
                self._report(SeppError(f"ack job {d.ctx.job_id}: {e}", op="ack"))
            return
        directive = err.directive() if isinstance(err, HandlerError) else RetryDirective.default()
        await self._nack(d, directive, str(err) or type(err).__name__)

    async def _ack_with_result(self, d: Delivery, result: bytes) -> None:
        """Acks d with its handler's result. A refusal (WrongState: the
        queue keeps no completed jobs, or the cluster is not upgraded) left
        the lease held: the job ran, so it is acked without the result
        rather than run again, and the refusal is reported, as the Go
        worker does. Any other failure is reported as it came (typed); the
        job then comes back when its lease expires."""
        try:
            await self._client.ack_with_result(d.ctx, result)
            return
        except WrongState as e:
            e.add_note(f"sepp worker: job {d.ctx.job_id}: result refused, acked without it")
            self._report(e)
        except SeppError as e:
            e.add_note(f"sepp worker: job {d.ctx.job_id}: ack with a result of {len(result)} bytes failed, "
                       f"not acked (it is delivered again once its lease expires)")
            self._report(e)
            return
        try:
            await self._client.ack(d.ctx)
        except SeppError as e:
            self._report(SeppError(f"ack job {d.ctx.job_id}: {e}", op="ack"))

    async def _ack_with_follow_ups(self, d: Delivery, c: Completion) -> None:
        """Acks d with its handler's result and follow-ups in one call. A
        result the queue does not keep (WrongState) is reported and the
        follow-ups sent without it. Follow-ups the server refuses left the
        lease held and nothing applied: the job is not done without them,
        so the refusal is reported and the job nacked to run again. A lost
        lease or an unknown outcome is reported as it came."""
        result = bytes(c.result)
        try:
            try:
                await self._client.ack_with_follow_ups(d.ctx, c.follow_ups, result)
                return
            except WrongState as e:
                if not result or isinstance(e, (LeaseLost, JobCancelled)):
                    raise
                e.add_note(f"sepp worker: job {d.ctx.job_id}: result refused, acking its follow-ups without it")
                self._report(e)
            await self._client.ack_with_follow_ups(d.ctx, c.follow_ups)
        except (LeaseLost, JobCancelled, UnknownOutcome, Unavailable) as e:
            e.add_note(f"sepp worker: job {d.ctx.job_id}: ack with follow-ups failed, not answering for it")
            self._report(e)
        except SeppError as e:
            e.add_note(f"sepp worker: job {d.ctx.job_id}: follow-ups refused, the job is nacked to run again")
            self._report(e)
            await self._nack(d, RetryDirective.default(), f"follow-ups refused: {e}")

    async def _nack(self, d: Delivery, directive: RetryDirective, reason: str) -> None:
        reason = reason.encode()[:self._max_reason].decode(errors="ignore")
        try:
            await self._client.nack(d.ctx, directive, reason)
        except SeppError as e:
            self._report(SeppError(f"nack job {d.ctx.job_id}: {e}", op="nack"))


class _LeaseKeeper:
    """Extends a running handler's lease every lease/3, on a timer (no task
    until an extension is due, so a short job costs nothing), carrying the
    handler's latest progress report (Delivery.progress) when there is one;
    a report brings the next extension forward, to no sooner than
    progress_interval after the last. A lease the server reports lost, or
    one that lapsed by the local clock while extending kept failing,
    cancels the handler's task."""

    def __init__(self, worker: Worker, d: Delivery, task: asyncio.Task[Any]) -> None:
        self.w, self.d, self.task = worker, d, task
        self.loop = asyncio.get_running_loop()
        self.lease = worker._lease.total_seconds()
        self.deadline = self.loop.time() + self.lease
        self.lost: Optional[BaseException] = None
        self.done = False
        self.timer: Optional[asyncio.TimerHandle] = None
        self.extending: Optional[asyncio.Task[None]] = None
        self.box = d._progress
        self.last = self.loop.time()  # of the last extension (the reserve, at first)
        self.due = self.last
        if self.box is not None:
            self.box.wake = self._wake
        self._arm(self.lease / 3)

    def _arm(self, delay: float) -> None:
        if self.box is not None and self.box.pending is not None:
            # A report waits: bring the extension forward.
            delay = min(delay, max(self.last + self.w._progress_interval - self.loop.time(), 0.0))
        self.due = self.loop.time() + delay
        self.timer = self.loop.call_later(delay, self._fire)

    def _wake(self) -> None:
        """A report came: extend no later than progress_interval after the
        last extension (an extension in flight re-arms when it is done)."""
        if self.done or self.timer is None or (self.extending is not None and not self.extending.done()):
            return
        at = max(self.last + self.w._progress_interval, self.loop.time())
        if at < self.due:
            self.timer.cancel()
            self._arm(at - self.loop.time())

    def _fire(self) -> None:
        self.timer = None
        if not self.done:
            self.extending = self.loop.create_task(self._extend())

    async def _send(self, timeout: float) -> None:
        """One extension, with the pending report if any. A report the
        server refuses (WrongState: it keeps no progress yet; InvalidArgument:
        out of its bounds) is dropped, the refusal reported once per
        delivery, and the lease extended without it; a report whose
        extension failed otherwise is kept for the next one unless a newer
        one came."""
        client, ctx, lease = self.w._client, self.d.ctx, self.w._lease
        p = self.box.take() if self.box is not None else None
        if p is None:
            await asyncio.wait_for(client.extend_lease(ctx, lease), timeout)
            return
        try:
            await asyncio.wait_for(client.report_progress(ctx, p.percent, p.message, lease=lease), timeout)
            return
        except (WrongState, InvalidArgument) as e:
            assert self.box is not None
            if not self.box.refused:
                self.box.refused = True
                e.add_note(f"sepp worker: job {ctx.job_id}: progress refused, extending the lease without it")
                self.w._report(e)
        except BaseException:
            if self.box is not None and self.box.pending is None:
                self.box.pending = p
            raise
        await asyncio.wait_for(client.extend_lease(ctx, lease), max(self.deadline - self.loop.time(), 0.001))

    async def _extend(self) -> None:
        try:
            await self._send(max(self.deadline - self.loop.time(), 0.001))
        except (LeaseLost, NotFound) as e:
            self._lose(e)
            return
        except (SeppError, asyncio.TimeoutError) as e:
            if self.loop.time() >= self.deadline:
                self._lose(SeppError(f"lease ran out while extending it failed ({e})", op="extend lease"))
                return
            if not self.done:
                self.last = self.loop.time()
                self.w._report(SeppError(f"extend lease of job {self.d.ctx.job_id}: {e}", op="extend lease"))
                self._arm(min(self.lease / 3, (self.deadline - self.loop.time()) / 2 + 0.001))
            return
        self.last = self.loop.time()
        self.deadline = self.last + self.lease
        if not self.done:
            self._arm(self.lease / 3)

    def _lose(self, err: BaseException) -> None:
        if self.done:
            return
        self.lost = err
        self.done = True
        # The message tells a handler that catches CancelledError why.
        self.task.cancel("job cancelled by an operator" if isinstance(err, JobCancelled) else "lease lost")

    def stop(self) -> None:
        self.done = True
        if self.box is not None:
            self.box.wake = None
        if self.timer is not None:
            self.timer.cancel()
        if self.extending is not None and not self.extending.done() and self.extending is not asyncio.current_task():
            self.extending.cancel()
