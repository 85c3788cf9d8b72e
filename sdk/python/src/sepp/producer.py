"""Producer: coalesces concurrent enqueues into EnqueueBatch calls."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Optional

from sepp.errors import ClientClosed, InvalidField, SeppError
from sepp.types import EnqueueRequest, EnqueueResult
from sepp.v1 import queue_service_pb2 as qpb

if TYPE_CHECKING:
    from sepp.client import SeppClient

__all__ = ["Producer"]


def _strip_item(err: SeppError, prefix: str) -> SeppError:
    if isinstance(err, InvalidField) and err.field.startswith(prefix):
        field = err.field[len(prefix):]
        return InvalidField(field, err.description.replace(err.field, field), err.limit, op=err.op,
                            code=err.code, server_message=err.server_message)
    return err


class _Item:
    __slots__ = ("wire", "key", "size", "future")

    def __init__(self, wire: qpb.EnqueueRequest, key: str, future: asyncio.Future[EnqueueResult]) -> None:
        self.wire = wire
        self.key = key
        self.size = wire.ByteSize()
        self.future = future


class Producer:
    """Batches the enqueues handed to it, by many tasks or by one with
    :meth:`enqueue_nowait`, into EnqueueBatch calls; each caller gets its own
    result. Retries and idempotency are those of ``enqueue_batch``: every job
    has its own idempotency key, so a retried batch adds no job twice.

    ``linger`` is how long the first job of a batch waits for company
    (default 1 ms); ``max_batch`` caps jobs per call (256, keep it at or
    below the server's max_batch_size); ``max_batch_bytes`` their encoded
    size (1 MiB); ``max_in_flight`` the batches sent at once (4). Close it
    (or use ``async with``) to flush.

    A request with ``after`` raises InvalidField naming ``after``, as a lone
    enqueue does: jobs that wait for each other go in one enqueue_batch.
    """

    def __init__(self, client: SeppClient, *, linger: timedelta = timedelta(milliseconds=1),
                 max_batch: int = 256, max_batch_bytes: int = 1 << 20, max_in_flight: int = 4) -> None:
        self._client = client
        self._linger = max(linger.total_seconds(), 0.0)
        self._max_batch = max(max_batch, 1)
        self._max_bytes = max(max_batch_bytes, 1)
        self._queue: asyncio.Queue[Optional[_Item]] = asyncio.Queue(maxsize=self._max_batch * max(max_in_flight, 1))
        self._in_flight = asyncio.Semaphore(max(max_in_flight, 1))
        self._sends: set[asyncio.Task[None]] = set()
        self._closed = False
        self._loop_task = asyncio.get_running_loop().create_task(self._loop())

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def enqueue_nowait(self, request: EnqueueRequest) -> asyncio.Future[EnqueueResult]:
        """Hand over a job and return a future of its result at once (after
        waiting for room when the producer's queue is full)."""
        if self._closed:
            raise ClientClosed("producer closed", op="enqueue")
        request.validate()
        from sepp.client import _refuse_after, new_key
        # A batch of the producer's making means nothing to after's indexes.
        _refuse_after(request, "enqueue")
        key = request.idempotency_key or new_key()
        fut: asyncio.Future[EnqueueResult] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Item(self._client._with_trace(request.to_proto(key)), key, fut))
        return fut

    async def enqueue(self, request: EnqueueRequest) -> EnqueueResult:
        """Enqueue through the next batch and return this job's result."""
        return await (await self.enqueue_nowait(request))

    async def close(self) -> None:
        """Send what was handed over, wait for every result, stop."""
        if self._closed:
            return
        self._closed = True
        await self._queue.put(None)
        await self._loop_task
        if self._sends:
            await asyncio.gather(*self._sends, return_exceptions=True)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        pending: Optional[_Item] = None
        while True:
            first = pending or await self._queue.get()
            pending = None
            if first is None:
                return
            batch, size = [first], first.size
            deadline = loop.time() + self._linger
            stop = False
            while len(batch) < self._max_batch:
                try:
                    it = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    try:
                        it = await asyncio.wait_for(self._queue.get(), remaining)
                    except asyncio.TimeoutError:
                        break
                if it is None:
                    stop = True
                    break
                if size + it.size > self._max_bytes:
                    pending = it
                    break
                batch.append(it)
                size += it.size
            await self._in_flight.acquire()
            t = loop.create_task(self._send(batch))
            self._sends.add(t)
            t.add_done_callback(self._sends.discard)
            if stop:
                return

    async def _send(self, batch: list[_Item]) -> None:
        try:
            results = await self._client._enqueue_batch_wire([b.wire for b in batch], [b.key for b in batch])
        except Exception as e:
            for b in batch:
                if not b.future.done():
                    b.future.set_exception(e)
            return
        except BaseException as e:  # cancelled: the callers must not hang
            for b in batch:
                if not b.future.done():
                    b.future.set_exception(ClientClosed(f"producer stopped: {e!r}", op="enqueue"))
            raise
        finally:
            self._in_flight.release()
        for i, (b, r) in enumerate(zip(batch, results)):
            if b.future.done():
                continue
            if r.error is not None:
                # The server names the item by its place in a batch the
                # caller never saw: name the field as for a lone enqueue.
                b.future.set_exception(_strip_item(r.error, f"jobs[{i}]."))
            elif r.result is not None:
                b.future.set_result(r.result)
