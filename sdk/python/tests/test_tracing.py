"""A job's trace context against the real cluster: the client's
trace_injector stamps it, a request's own wins, the server keeps it, and the
Worker's around_handler sees it on the delivery (the hook a tracing
library such as OpenTelemetry uses; none is installed here)."""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta
from typing import Awaitable, Callable

import pytest

from sepp import Delivery, EnqueueRequest, InvalidArgument, SeppClient, TraceContext, Worker

from cluster import Cluster

TP_INJECTED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP_OWN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


async def test_trace_context_round_trip(cluster: Cluster) -> None:
    queue = "tr-" + secrets.token_hex(4)
    injected = TraceContext(TP_INJECTED, "congo=t61rcWkgMzE")
    calls = 0

    # docs:begin python-injector
    # Called for each job enqueued without a trace context of its own. With
    # OpenTelemetry: carrier = {}; propagate.inject(carrier);
    # return TraceContext.from_headers(carrier)
    def inject() -> TraceContext:
        nonlocal calls
        calls += 1
        return injected

    async with await SeppClient.connect(cluster.addrs, trace_injector=inject) as c:
        # docs:end python-injector
        own = TraceContext.from_headers({"traceparent": TP_OWN})
        assert own is not None and own.as_headers() == {"traceparent": TP_OWN}
        a = await c.enqueue(EnqueueRequest(queue, "t"))
        b = await c.enqueue(EnqueueRequest(queue, "t", trace_context=own))
        batch = await c.enqueue_batch([EnqueueRequest(queue, "t")])
        async with c.producer() as p:
            produced = await p.enqueue(EnqueueRequest(queue, "t"))
        assert calls == 3  # b carried its own
        job = await c.get_job(a.job_id)
        assert job.trace_context == injected

        seen: dict[int, TraceContext | None] = {}

        # docs:begin python-around
        # Runs each handler. With OpenTelemetry: parent =
        # propagate.extract(d.job.trace_context.as_headers()), then
        # `with tracer.start_as_current_span(..., context=parent): await run()`
        async def around(d: Delivery, run: Callable[[], Awaitable[None]]) -> None:
            seen[d.ctx.job_id] = d.job.trace_context
            await run()
        # docs:end python-around

        handled: list[int] = []

        async def handle(d: Delivery) -> None:
            handled.append(d.ctx.job_id)

        # docs:begin python-worker
        w = Worker(c, wait=timedelta(milliseconds=200), around_handler=around)
        # docs:end python-worker
        w.handle(queue, "", handle)
        async with w:
            loop = asyncio.get_running_loop()
            end = loop.time() + 20
            while len(handled) < 4:
                assert loop.time() < end, f"handled {handled}"
                await asyncio.sleep(0.05)
        assert batch[0].result is not None
        assert seen == {a.job_id: injected, b.job_id: own, batch[0].result.job_id: injected,
                        produced.job_id: injected}


async def test_invalid_trace_context_names_the_field(client: SeppClient) -> None:
    with pytest.raises(InvalidArgument) as e:
        await client.enqueue(EnqueueRequest("tr-bad", "t", trace_context=TraceContext("not-a-traceparent")))
    assert "trace_context.traceparent" in str(e.value)
