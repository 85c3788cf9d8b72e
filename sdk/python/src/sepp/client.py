"""SeppClient: the asyncio client of a sepp cluster.

It follows the leader like the Go client (client/client.go): every write
goes to the node believed to lead; a NotLeader answer is followed to the
node it names at once; a failure that may have applied (a dropped
connection, an attempt timeout, ABORTED with UnknownOutcome) is retried
only by calls that are safe to repeat: an enqueue carries one idempotency
key on all its attempts, a reserve one request id, acks and the like are
fenced by the lease token. A drain is destructive and is never retried
once it may have reached the server.
"""

from __future__ import annotations

import asyncio
import enum
import random
import secrets
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Optional, Sequence, TypeVar, Union

import grpc
import grpc.aio

from sepp.errors import (ClientClosed, InternalError, InvalidField, LeaseLost, NotFound, SeppError, UnknownOutcome,
                         from_item_error, from_rpc_error, not_leader_hint)
from sepp.types import (ActionResult, BatchResult, ClusterMember, ClusterStatus, DeadLetterRecord,
                        Delivery, EnqueueRequest, EnqueueResult, Job, JobContext, JobOutcome, JobParent, JobState,
                        NodeInfo, ParentResult, PurgeTarget,
                        QueueInfo, QueueRemoval, QueueSettings, QueueStats, RedriveOptions, RedrivePreview,
                        RedriveTask, RetryDirective, Schedule, ScheduleDefinition, ServerInfo, TraceContext, _from_ts,
                        check_progress,
                        _queue_stats, _to_duration, _to_ts, _whole_ms)
from sepp.v1 import admin_service_pb2 as apb
from sepp.v1 import admin_service_pb2_grpc as agrpc
from sepp.v1 import cluster_service_pb2 as cpb
from sepp.v1 import cluster_service_pb2_grpc as cgrpc
from sepp.v1 import queue_service_pb2 as qpb
from sepp.v1 import queue_service_pb2_grpc as qgrpc
from sepp.v1 import types_pb2 as tpb

if TYPE_CHECKING:
    from sepp.producer import Producer

__all__ = ["SeppClient", "new_key"]

T = TypeVar("T")

# The response header a follower sets when it forwarded the call to the
# leader: the leader's gRPC address (rpc.LeaderAddrHeader).
_LEADER_HEADER = "sepp-leader-grpc-addr"

# Ack coalescing: calls on the wire at once, and acks per AckBatch (well
# under the server's limit of 1000).
_ACK_MAX_IN_FLIGHT = 4
_ACK_MAX_BATCH = 256
# The wait each WaitJob call of wait_job asks for: the server's default,
# below its 60 s cap.
_WAIT_JOB_POLL = timedelta(seconds=30)


def new_key() -> str:
    """A random idempotency key or request id: 16 random bytes, hex."""
    return secrets.token_hex(16)


class _Policy(enum.Enum):
    # The call is idempotent or fenced: retry what did not certainly fail.
    SAFE = 1
    # The call is destructive (drain): retry only what the server said it
    # did not apply (NotLeader).
    NOT_SENT = 2


class _Outcome(enum.Enum):
    FINAL = 1  # a real answer: raise it
    NOT_APPLIED = 2  # the server said nothing applied: retry
    MAYBE_APPLIED = 3  # may have applied: retry only if safe


@dataclass
class _Attempt:
    addr: str
    channel: grpc.aio.Channel
    timeout: Optional[float]
    # True when an earlier attempt of this call may have taken effect.
    maybe_applied: bool = False


class _LeaderMoved(Exception):
    """An attempt abandoned because another node named a different leader
    while the attempt's node stayed silent."""

    def __init__(self, to: str) -> None:
        super().__init__(f"the node stopped answering and {to} leads now")
        self.to = to


def _classify(err: grpc.aio.AioRpcError) -> tuple[_Outcome, Optional[str]]:
    hint = not_leader_hint(err)
    if hint is not None:
        return _Outcome.NOT_APPLIED, hint.leader_grpc_addr
    if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED, grpc.StatusCode.DEADLINE_EXCEEDED):
        # UNAVAILABLE without NotLeader is "no leader" or a transport
        # failure, and a transport failure may come after the request was
        # sent; DEADLINE_EXCEEDED is our own attempt timeout.
        return _Outcome.MAYBE_APPLIED, None
    return _Outcome.FINAL, None


# The plugin's service stubs are untyped; these give them one place.
def _queue(ch: grpc.aio.Channel) -> Any:
    return qgrpc.QueueServiceStub(ch)  # type: ignore[no-untyped-call]


def _admin_stub(ch: grpc.aio.Channel) -> Any:
    return agrpc.AdminServiceStub(ch)  # type: ignore[no-untyped-call]


def _cluster(ch: grpc.aio.Channel) -> Any:
    return cgrpc.ClusterServiceStub(ch)  # type: ignore[no-untyped-call]


def _refuse_after(request: EnqueueRequest, op: str) -> None:
    """Refuse a request that waits for others (after) where there is no call
    of several requests for its indexes to name: as the server refuses a
    lone Enqueue with after."""
    if request.after:
        raise InvalidField("after", "after names requests of the same call: only the jobs of one enqueue_batch or "
                           "the follow-ups of one ack can wait for each other",
                           "only in enqueue_batch or follow-ups", op=op)


def _node(m: tpb.NodeInfo) -> NodeInfo:
    return NodeInfo(m.id, m.raft_addr, m.grpc_addr, m.http_addr)


def _split_addr(addr: str) -> tuple[str, Optional[bool]]:
    """host:port and whether the address asked for TLS (None: unsaid)."""
    a = addr.strip()
    if a.startswith("https://"):
        return a[len("https://"):].rstrip("/"), True
    if a.startswith("http://"):
        return a[len("http://"):].rstrip("/"), False
    return a.rstrip("/"), None


class _Watch:
    """The leader probe of one watched attempt (see SeppClient._watched)."""

    def __init__(self, client: SeppClient, addr: str, task: asyncio.Task[Any]) -> None:
        self.client, self.addr, self.task = client, addr, task
        self.moved = ""
        self.done = False
        self.timer: Optional[asyncio.TimerHandle] = None
        self.probe: Optional[asyncio.Task[None]] = None

    def arm(self, delay: float) -> None:
        self.timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        if not self.done:
            self.probe = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        leader = await self.client._probe_leader(self.addr)
        if self.done:
            return
        if leader and leader != self.addr:
            self.moved = leader
            self.task.cancel()
            return
        self.arm(self.client._leader_probe)

    def stop(self) -> None:
        self.done = True
        if self.timer is not None:
            self.timer.cancel()
        if self.probe is not None and not self.probe.done():
            self.probe.cancel()


class SeppClient:
    """A client of a sepp cluster; safe for concurrent use by the tasks of
    one event loop. Create it with :meth:`connect`, close it with
    :meth:`close` or ``async with``."""

    def __init__(self, addrs: Sequence[str], *, tls: bool = False, token: Optional[str] = None,
                 root_certificates: Optional[bytes] = None, private_key: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None, retry_timeout: float = 15.0,
                 attempt_timeout: float = 10.0, backoff_base: float = 0.005, backoff_max: float = 0.1,
                 leader_probe: float = 0.3,
                 trace_injector: Optional[Callable[[], Optional[TraceContext]]] = None) -> None:
        seeds: list[str] = []
        for a in addrs:
            hostport, wants_tls = _split_addr(a)
            if not hostport:
                continue
            if wants_tls:
                tls = True
            if hostport not in seeds:
                seeds.append(hostport)
        if not seeds:
            raise InvalidField("addrs", "addrs: at least one node address (host:port) is required")
        self._tls = tls or root_certificates is not None or certificate_chain is not None
        self._creds: Optional[grpc.ChannelCredentials] = None
        if self._tls:
            self._creds = grpc.ssl_channel_credentials(root_certificates, private_key, certificate_chain)
        self._metadata: tuple[tuple[str, str], ...] = ()
        if token:
            self._metadata = (("authorization", f"Bearer {token}"),)
        self.retry_timeout = retry_timeout
        #: Called for each job enqueued without a trace context of its own;
        #: what it returns (the caller's current trace context, from a
        #: tracing library) rides with the job. None: no tracing.
        self.trace_injector = trace_injector
        self.attempt_timeout = attempt_timeout
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._leader_probe = leader_probe
        self._known = list(seeds)
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._forwarders: dict[str, str] = {}
        self._leader = ""
        self._next = 0
        self._closed = False
        self._acks: deque[tuple[JobContext, asyncio.Future[None]]] = deque()
        self._acks_in_flight = 0
        self._ack_tasks: set[asyncio.Task[None]] = set()

    @classmethod
    async def connect(cls, *addrs: Union[str, Sequence[str]], token: Optional[str] = None,
                      root_certificates: Optional[bytes] = None, private_key: Optional[bytes] = None,
                      certificate_chain: Optional[bytes] = None, **options: Any) -> SeppClient:
        """A client for the nodes at ``addrs`` (``http://host:port``,
        ``https://host:port`` or ``host:port``; a list works too). It
        connects lazily: the first call finds the leader. ``token`` is sent
        as ``authorization: Bearer <token>``; ``https://`` or certificates
        turn TLS on (client certificates for a server that requires them).
        ``options`` are retry_timeout, attempt_timeout, backoff_base,
        backoff_max and leader_probe, in seconds, and trace_injector (see
        docs/tracing.md)."""
        flat: list[str] = []
        for a in addrs:
            flat.extend([a] if isinstance(a, str) else a)
        return cls(flat, token=token, root_certificates=root_certificates, private_key=private_key,
                   certificate_chain=certificate_chain, **options)

    async def __aenter__(self) -> SeppClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection; calls in flight fail."""
        if self._closed:
            return
        self._closed = True
        channels = list(self._channels.values())
        self._channels.clear()
        await asyncio.gather(*(c.close() for c in channels), return_exceptions=True)

    @property
    def addrs(self) -> list[str]:
        """The addresses the client knows: the seeds plus leaders it was
        pointed at."""
        return list(self._known)

    @property
    def leader(self) -> str:
        """The address writes go to ("" while unknown)."""
        return self._leader

    # -- connection and leader bookkeeping ---------------------------------

    def _channel(self, addr: str) -> grpc.aio.Channel:
        ch = self._channels.get(addr)
        if ch is None:
            opts = [("grpc.max_receive_message_length", 64 << 20)]
            if self._creds is not None:
                ch = grpc.aio.secure_channel(addr, self._creds, options=opts)
            else:
                ch = grpc.aio.insecure_channel(addr, options=opts)
            self._channels[addr] = ch
            if addr not in self._known:
                self._known.append(addr)
        return ch

    def _target(self) -> str:
        if self._closed:
            raise ClientClosed("client closed")
        return self._leader or self._known[self._next % len(self._known)]

    def _forget(self, addr: str) -> None:
        if self._leader == addr:
            self._leader = ""
        if self._known[self._next % len(self._known)] == addr:
            self._next += 1

    def _follow(self, frm: str, leader: str) -> None:
        if not leader or leader == frm:
            self._forget(frm)
        else:
            self._leader = leader

    def _confirm_leader(self, addr: str) -> None:
        self._leader = self._forwarders.get(addr, addr)

    def _backoff(self, n: int) -> float:
        d = min(self._backoff_base * (2 ** min(n, 30)), self._backoff_max)
        return float(d / 2 + random.uniform(0, d / 2))

    async def _unary(self, a: _Attempt, call: Any, req: Any) -> Any:
        """One unary call on the attempt's node; notes whether that node
        forwarded it to the leader (so later calls skip the hop)."""
        c = call(req, timeout=a.timeout, metadata=self._metadata)
        resp = await c
        md = await c.initial_metadata()
        fwd = ""
        for k, v in md or ():
            if k == _LEADER_HEADER and isinstance(v, str):
                fwd = v
        if fwd and fwd != a.addr:
            self._forwarders[a.addr] = fwd
        else:
            self._forwarders.pop(a.addr, None)
        return resp

    async def _probe_leader(self, frm: str) -> str:
        """Ask the known nodes other than ``frm`` who leads."""
        for addr in list(self._known):
            if addr == frm or self._closed:
                continue
            stub = _cluster(self._channel(addr))
            try:
                resp = await stub.Status(cpb.StatusRequest(), timeout=self._leader_probe, metadata=self._metadata)
            except grpc.aio.AioRpcError:
                continue
            if resp.leader.grpc_addr:
                return str(resp.leader.grpc_addr)
        return ""

    async def _watched(self, fn: Callable[[_Attempt], Awaitable[T]], a: _Attempt, extra: float) -> T:
        """Run one attempt. If it has no answer after the probe delay, a
        timer (no task until then, so an answered call costs nothing) asks
        the other nodes who leads, and again at that interval; when one
        names another leader, the attempt is cancelled and _LeaderMoved
        raised: a leader that froze or was cut off costs about an election,
        not the attempt timeout. Only calls safe to retry are watched."""
        if self._leader_probe <= 0:
            return await fn(a)
        me = asyncio.current_task()
        assert me is not None
        w = _Watch(self, a.addr, me)
        w.arm(extra + self._leader_probe)
        try:
            return await fn(a)
        except asyncio.CancelledError:
            # Our own cancel, and no one else's: the leader moved.
            if w.moved and me.uncancel() == 0:
                raise _LeaderMoved(w.moved) from None
            raise
        finally:
            w.stop()

    async def _call(self, op: str, policy: _Policy, fn: Callable[[_Attempt], Awaitable[T]],
                    extra: float = 0.0) -> T:
        """Run fn against the leader, retrying per policy with jittered
        exponential backoff until it succeeds, fails for good, or
        retry_timeout runs out."""
        start = time.monotonic()
        maybe_applied = False
        backoff_n = 0
        redirects = 0
        while True:
            addr = self._target()
            a = _Attempt(addr, self._channel(addr),
                         self.attempt_timeout + extra if self.attempt_timeout > 0 else None, maybe_applied)
            hint: Optional[str] = None
            try:
                if policy is _Policy.NOT_SENT:
                    # Abandoning the attempt could lose what it returns (a
                    # drain's records): it runs to its own end.
                    return await fn(a)
                return await self._watched(fn, a, extra)
            except _LeaderMoved as moved:
                kind, hint = _Outcome.MAYBE_APPLIED, moved.to
                err: SeppError = UnknownOutcome(str(moved), op=op)
            except grpc.aio.AioRpcError as e:
                if self._closed:
                    raise ClientClosed("client closed", op=op) from e
                kind, hint = _classify(e)
                err = from_rpc_error(op, e)
            if kind is _Outcome.FINAL:
                if maybe_applied and isinstance(err, LeaseLost):
                    # A fenced retry finding the lease gone: the first
                    # attempt may have taken effect, or the lease expired.
                    raise UnknownOutcome(f"outcome unknown (an attempt may have taken effect): {err}",
                                         err, op=op, code=err.code) from err
                raise err
            if kind is _Outcome.MAYBE_APPLIED and policy is _Policy.NOT_SENT:
                raise UnknownOutcome(f"outcome unknown (the request may have been applied): {err}",
                                     err, op=op, code=err.code) from err
            if kind is _Outcome.MAYBE_APPLIED:
                maybe_applied = True
            elapsed = time.monotonic() - start
            if self.retry_timeout <= 0 or elapsed >= self.retry_timeout:
                if maybe_applied:
                    raise UnknownOutcome(f"outcome unknown (an attempt may have taken effect): {err}",
                                         err, op=op, code=err.code) from err
                raise err
            if hint and hint != addr and redirects < 3:
                # A fresh hint: follow it at once.
                self._follow(addr, hint)
                redirects += 1
                continue
            redirects = 0
            if hint is not None:
                self._follow(addr, hint)
            else:
                self._forget(addr)
            wait = min(self._backoff(backoff_n), max(self.retry_timeout - elapsed, 0.0))
            backoff_n += 1
            await asyncio.sleep(wait)

    # -- producer calls -----------------------------------------------------

    async def enqueue(self, request: EnqueueRequest) -> EnqueueResult:
        """Add one job. Unless the request sets an idempotency key the
        client generates one; either way the same key rides on every retry
        of this call, so a retry through a failover never adds a second job.
        A request with ``after`` raises InvalidField naming ``after``: only
        the jobs of one enqueue_batch (or an ack's follow-ups) wait for each
        other."""
        request.validate()
        _refuse_after(request, "enqueue")
        key = request.idempotency_key or new_key()
        m = self._with_trace(request.to_proto(key))

        async def attempt(a: _Attempt) -> EnqueueResult:
            resp = await self._unary(a, _queue(a.channel).Enqueue, m)
            self._confirm_leader(a.addr)
            return EnqueueResult(resp.job_id, JobState(resp.state), resp.duplicate and not a.maybe_applied, key)

        return await self._call("enqueue", _Policy.SAFE, attempt)

    def _with_trace(self, m: qpb.EnqueueRequest) -> qpb.EnqueueRequest:
        """m with the trace_injector's trace context, unless m has one."""
        if self.trace_injector is not None and not m.HasField("trace_context"):
            tc = self.trace_injector()
            if tc is not None:
                m.trace_context.CopyFrom(tc.to_proto())
        return m

    async def enqueue_batch(self, requests: Sequence[EnqueueRequest]) -> list[BatchResult]:
        """Add several jobs in one call; each item succeeds or fails on its
        own, results in order. Every item has its own idempotency key, so a
        retried batch adds no job twice. Raises only when the call as a
        whole failed (a batch over max_batch_size: InvalidArgument).

        A batch in which any job waits for others (``after``: indexes of
        earlier items) is a workflow, applied whole: every item succeeds or
        the call raises, naming the item that refused it (InvalidField
        naming ``jobs[i].after[k]``, say), and nothing is enqueued. An item
        the client itself refuses fails such a batch whole too, before it is
        sent, since dropping it would shift the indexes."""
        whole = any(r.after for r in requests)
        out: list[Optional[BatchResult]] = [None] * len(requests)
        wire: list[qpb.EnqueueRequest] = []
        keys: list[str] = []
        idx: list[int] = []
        for i, r in enumerate(requests):
            try:
                r.validate(f"jobs[{i}]")
            except SeppError as e:
                if whole:
                    raise  # jobs that wait for each other go whole or not at all
                out[i] = BatchResult(error=e)
                continue
            key = r.idempotency_key or new_key()
            wire.append(self._with_trace(r.to_proto(key)))
            keys.append(key)
            idx.append(i)
        if wire:
            results = await self._enqueue_batch_wire(wire, keys)
            for wi, res in enumerate(results):
                err = res.error
                if isinstance(err, InvalidField) and wi != idx[wi] and err.field.startswith(f"jobs[{wi}]"):
                    # The server numbers items as sent; name them as given.
                    new_field = f"jobs[{idx[wi]}]" + err.field[len(f"jobs[{wi}]"):]
                    res = BatchResult(error=InvalidField(new_field, err.description.replace(err.field, new_field),
                                                         err.limit, op=err.op, code=err.code,
                                                         server_message=err.server_message))
                out[idx[wi]] = res
        return [r if r is not None else BatchResult(error=InternalError("no result")) for r in out]

    async def _enqueue_batch_wire(self, jobs: list[qpb.EnqueueRequest], keys: list[str]) -> list[BatchResult]:
        m = qpb.EnqueueBatchRequest(jobs=jobs)

        async def attempt(a: _Attempt) -> list[BatchResult]:
            resp = await self._unary(a, _queue(a.channel).EnqueueBatch, m)
            self._confirm_leader(a.addr)
            if len(resp.results) != len(jobs):
                raise InternalError(f"server answered {len(resp.results)} results for {len(jobs)} jobs",
                                    op="enqueue batch")
            out = []
            for i, r in enumerate(resp.results):
                if r.HasField("error"):
                    ie = r.error
                    out.append(BatchResult(error=from_item_error("enqueue", ie.code, ie.message, ie.details)))
                else:
                    e = r.enqueued
                    out.append(BatchResult(EnqueueResult(e.job_id, JobState(e.state),
                                                         e.duplicate and not a.maybe_applied, keys[i])))
            return out

        return await self._call("enqueue batch", _Policy.SAFE, attempt)

    def producer(self, **options: Any) -> Producer:
        """A batching producer sending through this client (see Producer)."""
        from sepp.producer import Producer
        return Producer(self, **options)

    # -- worker calls -------------------------------------------------------

    async def reserve(self, queue: str, *, max: int = 1, worker_id: str = "",
                      lease: Optional[timedelta] = None, wait: Optional[timedelta] = None,
                      request_id: str = "") -> list[Delivery]:
        """Lease up to ``max`` Ready jobs of ``queue``, highest priority
        first, FIFO within a priority; [] when none was ready within
        ``wait`` (a long-poll the server caps). One request id rides on
        every retry, so a retried reserve returns the same deliveries."""
        if not queue:
            raise InvalidField("queue", "queue must not be empty", op="reserve")
        if max < 0:
            raise InvalidField("max", f"max must not be negative, got {max}", op="reserve")
        m = qpb.ReserveRequest(queue=queue, worker_id=worker_id, max=max, request_id=request_id or new_key())
        extra = 0.0
        if lease is not None and lease > timedelta(0):
            m.lease.CopyFrom(_to_duration(lease))
        if wait is not None and wait > timedelta(0):
            m.wait.CopyFrom(_to_duration(wait))
            extra = wait.total_seconds()

        async def attempt(a: _Attempt) -> list[Delivery]:
            resp = await self._unary(a, _queue(a.channel).Reserve, m)
            self._confirm_leader(a.addr)
            return [Delivery(JobContext.from_proto(j.ctx), Job.from_proto(j.job)) for j in resp.jobs]

        return await self._call("reserve", _Policy.SAFE, attempt, extra)

    async def wait_job(self, job_id: int) -> JobOutcome:
        """Wait until the job completed or died and return its outcome
        (bound it with asyncio.timeout). It long-polls the leader, asking
        again each time a poll runs out; through a leader change it retries
        on the new leader, which answers the same (the outcome is replicated
        state). NotFound when the server holds no such job: never enqueued,
        or gone without a record kept (completed and dead-letter
        retention)."""
        while True:
            out = await self.poll_job(job_id, timeout=_WAIT_JOB_POLL)
            if out.terminal:
                return out

    async def poll_job(self, job_id: int, *, timeout: timedelta = timedelta(seconds=30)) -> JobOutcome:
        """One WaitJob call of at most ``timeout`` (the server caps it at
        60 s): ``terminal`` is False when the job was still running at its
        end."""
        m = qpb.WaitJobRequest(job_id=job_id, timeout_ms=max(_whole_ms(timeout), 1))

        async def attempt(a: _Attempt) -> JobOutcome:
            resp = await self._unary(a, _queue(a.channel).WaitJob, m)
            self._confirm_leader(a.addr)
            return JobOutcome.from_proto(resp)

        return await self._call("wait job", _Policy.SAFE, attempt, timeout.total_seconds())

    async def enqueue_and_wait(self, request: EnqueueRequest) -> tuple[EnqueueResult, JobOutcome]:
        """Enqueue, then wait_job on the new job."""
        res = await self.enqueue(request)
        return res, await self.wait_job(res.job_id)

    async def ack(self, ctx: JobContext) -> None:
        """Complete a delivery: the job leaves the server. LeaseLost means
        the lease was no longer this delivery's.

        Concurrent acks are coalesced, as the Go client does: a lone ack
        goes out at once as an Ack call; while four calls are on the wire,
        further acks queue and leave together in one AckBatch. Each caller
        still waits for its own confirmed result."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        item = (ctx, fut)
        self._acks.append(item)
        self._pump_acks()
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            if not fut.done() and item in self._acks:
                self._acks.remove(item)  # not sent: withdrawn, nothing happened
            else:
                fut.add_done_callback(lambda f: f.exception())  # sent: its fate is the batch's
            raise

    def _pump_acks(self) -> None:
        loop = asyncio.get_running_loop()
        while self._acks and self._acks_in_flight < _ACK_MAX_IN_FLIGHT:
            batch = [self._acks.popleft() for _ in range(min(len(self._acks), _ACK_MAX_BATCH))]
            self._acks_in_flight += 1
            t = loop.create_task(self._send_acks(batch))
            self._ack_tasks.add(t)
            t.add_done_callback(self._ack_tasks.discard)

    async def _send_acks(self, batch: list[tuple[JobContext, asyncio.Future[None]]]) -> None:
        errs: list[Optional[BaseException]]
        try:
            if len(batch) == 1:
                await self._ack_one(batch[0][0])
                errs = [None]
            else:
                errs = list(await self.ack_batch([c for c, _ in batch]))
        except Exception as e:
            errs = [e] * len(batch)
        finally:
            self._acks_in_flight -= 1
        for (_, fut), err in zip(batch, errs):
            if fut.done():
                continue
            if err is None:
                fut.set_result(None)
            else:
                fut.set_exception(err)
        self._pump_acks()

    async def ack_with_result(self, ctx: JobContext, result: bytes) -> None:
        """Complete a delivery with a result, kept with the completed job for
        its queue's completed_retention_ms: wait_job and get_job return it.
        At most the server's max_result_bytes (InvalidArgument over it).
        Not coalesced with other acks (AckBatch carries no results). A
        queue that keeps no completed jobs refuses it with WrongState, a
        cluster not yet upgraded with Unsupported; either way the lease is
        still held, so the worker may ack without it."""
        m = qpb.AckRequest(ctx=ctx.to_proto(), result=result)

        async def attempt(a: _Attempt) -> None:
            await self._unary(a, _queue(a.channel).Ack, m)

        await self._call("ack", _Policy.SAFE, attempt)

    async def ack_with_follow_ups(self, ctx: JobContext, follow_ups: Sequence[EnqueueRequest],
                                  result: bytes = b"") -> list[EnqueueResult]:
        """Complete a delivery and enqueue follow_ups in the same log entry,
        all or nothing; returns their results in order, as enqueue's
        (duplicate when a job already holds the idempotency or unique key).
        result, when not empty, is kept as ack_with_result keeps it.

        Fenced by the lease: a lost lease raises LeaseLost and no follow-up
        exists. A follow-up the server refuses (InvalidField naming
        follow_ups[i], a full queue or budget, a refusing unique key)
        raises and nothing is applied, the lease still held; a cluster not
        yet upgraded refuses follow-ups with WrongState. Each follow-up gets
        an idempotency key unless it has one, so a retry cannot enqueue it
        twice; a retry that finds the lease gone because the first attempt
        applied raises UnknownOutcome, as ack does. At most the server's
        max_batch_size follow-ups. A follow-up may wait for earlier ones
        (``after``: their indexes in ``follow_ups``), as in enqueue_batch."""
        wire: list[qpb.EnqueueRequest] = []
        keys: list[str] = []
        for i, r in enumerate(follow_ups):
            r.validate(f"follow_ups[{i}]")
            key = r.idempotency_key or new_key()
            wire.append(self._with_trace(r.to_proto(key)))
            keys.append(key)
        m = qpb.AckRequest(ctx=ctx.to_proto(), result=result, follow_ups=wire)

        async def attempt(a: _Attempt) -> list[EnqueueResult]:
            resp = await self._unary(a, _queue(a.channel).Ack, m)
            self._confirm_leader(a.addr)
            if len(resp.follow_ups) != len(keys):
                raise InternalError(f"server answered {len(resp.follow_ups)} follow-up results for {len(keys)} "
                                    "follow-ups (a server older than follow-ups ignores them)", op="ack")
            return [EnqueueResult(r.job_id, JobState(r.state), r.duplicate and not a.maybe_applied, k)
                    for r, k in zip(resp.follow_ups, keys)]

        return await self._call("ack", _Policy.SAFE, attempt)

    async def _ack_one(self, ctx: JobContext) -> None:
        m = qpb.AckRequest(ctx=ctx.to_proto())

        async def attempt(a: _Attempt) -> None:
            await self._unary(a, _queue(a.channel).Ack, m)

        await self._call("ack", _Policy.SAFE, attempt)

    async def ack_batch(self, ctxs: Sequence[JobContext]) -> list[Optional[SeppError]]:
        """Complete several deliveries in one call; one entry per delivery,
        in order: None when acked, else what ack would have raised for it.
        A call that fails as a whole raises (it may have acked some: it is
        retried whole, which the lease tokens make safe)."""
        if not ctxs:
            return []
        m = qpb.AckBatchRequest(ctxs=[c.to_proto() for c in ctxs])

        async def attempt(a: _Attempt) -> list[Optional[SeppError]]:
            resp = await self._unary(a, _queue(a.channel).AckBatch, m)
            out: list[Optional[SeppError]] = []
            for r in resp.results:
                if r.HasField("error"):
                    err = from_item_error("ack", r.error.code, r.error.message, r.error.details)
                    if a.maybe_applied and isinstance(err, LeaseLost):
                        err = UnknownOutcome(f"outcome unknown (an attempt may have acked it): {err}", err,
                                             op="ack", code=err.code)
                    out.append(err)
                else:
                    out.append(None)
            return out

        return await self._call("ack batch", _Policy.SAFE, attempt)

    async def nack(self, ctx: JobContext, directive: Optional[RetryDirective] = None, reason: str = "") -> bool:
        """Fail a delivery; the directive (default: the queue's retry
        policy) says what happens next. True exactly when the job was
        dead-lettered (dead_letter(), or the attempt limit was hit)."""
        d = directive or RetryDirective.default()
        m = qpb.NackRequest(ctx=ctx.to_proto(), directive=d.to_proto(), reason=reason)

        async def attempt(a: _Attempt) -> bool:
            resp = await self._unary(a, _queue(a.channel).Nack, m)
            return bool(resp.dead_lettered)

        return await self._call("nack", _Policy.SAFE, attempt)

    async def release(self, ctx: JobContext) -> None:
        """Hand a delivery back without burning an attempt: Ready at once."""
        m = qpb.ReleaseRequest(ctx=ctx.to_proto())

        async def attempt(a: _Attempt) -> None:
            await self._unary(a, _queue(a.channel).Release, m)

        await self._call("release", _Policy.SAFE, attempt)

    async def extend_lease(self, ctx: JobContext, lease: Optional[timedelta] = None) -> Optional[datetime]:
        """Push the lease deadline to now + lease (None: the server's
        default); returns the new deadline by the server's clock."""
        m = qpb.ExtendLeaseRequest(ctx=ctx.to_proto())
        if lease is not None and lease > timedelta(0):
            m.lease.CopyFrom(_to_duration(lease))

        async def attempt(a: _Attempt) -> Optional[datetime]:
            resp = await self._unary(a, _queue(a.channel).ExtendLease, m)
            return _from_ts(resp.lease_deadline)

        return await self._call("extend lease", _Policy.SAFE, attempt)

    async def report_progress(self, ctx: JobContext, percent: int, message: str = "",
                              lease: Optional[timedelta] = None) -> Optional[datetime]:
        """Report a running job's progress (``percent`` 0..100, ``message``
        at most 256 bytes of UTF-8) and extend its lease (None: the server's
        default), in one call and one log entry. get_job, list_jobs and
        wait_job show it (Job.progress) until the delivery ends. Out of
        bounds: InvalidField naming progress.percent or progress.message.
        While some member of the cluster does not keep progress yet (a
        rolling upgrade) it raises WrongState (FAILED_PRECONDITION, VERSION
        feature=progress) and extends nothing: call extend_lease instead."""
        check_progress(percent, message, "report progress")
        m = qpb.ExtendLeaseRequest(ctx=ctx.to_proto())
        m.progress.percent = percent
        m.progress.message = message
        if lease is not None and lease > timedelta(0):
            m.lease.CopyFrom(_to_duration(lease))

        async def attempt(a: _Attempt) -> Optional[datetime]:
            resp = await self._unary(a, _queue(a.channel).ExtendLease, m)
            return _from_ts(resp.lease_deadline)

        return await self._call("report progress", _Policy.SAFE, attempt)

    async def drain_dead_letters(self, queue: Optional[str] = None, max: int = 1) -> list[DeadLetterRecord]:
        """Return up to ``max`` dead-letter records, oldest first, removing
        them on the server in the same transaction.

        Destructive: never retried once the request may have reached the
        server; if the answer is lost it raises UnknownOutcome and those
        records may be gone. Only a NotLeader answer (nothing applied) is
        followed. An empty list is also what a server with retention off
        returns: check server_info().dead_letter_retention_enabled."""
        if max < 0:
            raise InvalidField("max", f"max must not be negative, got {max}", op="drain dead letters")
        if not self._leader:
            # Find a live leader with a safe call first, so the one drain
            # attempt does not go to a node that is down.
            await self.server_info()
        m = qpb.DrainDeadLettersRequest(max=max)
        if queue:
            m.queue = queue

        async def attempt(a: _Attempt) -> list[DeadLetterRecord]:
            resp = await self._unary(a, _queue(a.channel).DrainDeadLetters, m)
            return [DeadLetterRecord.from_proto(r) for r in resp.records]

        return await self._call("drain dead letters", _Policy.NOT_SENT, attempt)

    async def server_info(self, *, stale: bool = False) -> ServerInfo:
        """The leader's capabilities and limits (``stale``: any node's, which
        may lag)."""
        m = qpb.GetServerInfoRequest(allow_stale=stale)

        async def attempt(a: _Attempt) -> ServerInfo:
            r = await self._unary(a, _queue(a.channel).GetServerInfo, m)
            if not r.stale:
                self._confirm_leader(a.addr)
            return ServerInfo(
                version=r.version, node_id=r.node_id, leader_id=r.leader_id, leader_addr=r.leader_grpc_addr,
                stale=r.stale, dead_letter_retention_enabled=r.dead_letter_retention_enabled,
                dead_letter_retention=timedelta(milliseconds=r.dead_letter_retention_ms),
                max_reserve_batch=r.max_reserve_batch,
                max_schedule_horizon=timedelta(milliseconds=r.max_schedule_horizon_ms),
                limits=r.limits, queues=tuple(r.queues))

        return await self._call("server info", _Policy.SAFE, attempt)

    # -- admin calls --------------------------------------------------------

    async def _admin(self, op: str, method: str, req: Any, policy: _Policy = _Policy.SAFE) -> Any:
        if policy is _Policy.NOT_SENT and not self._leader:
            # Find a live leader with a safe call first, so the one attempt
            # that may not be retried does not go to a node that is down.
            await self.server_info()

        async def attempt(a: _Attempt) -> Any:
            return await self._unary(a, getattr(_admin_stub(a.channel), method), req)

        return await self._call(op, policy, attempt)

    async def list_queues(self, *, stale: bool = False, tags: Sequence[str] = ()) -> list[QueueStats]:
        """Every queue's counts; with ``tags``, only the queues matching
        every term: ``"key=value"`` (the tag with that value) or ``"key"``
        (the tag, any value)."""
        r = await self._admin("list queues", "ListQueues", apb.ListQueuesRequest(allow_stale=stale, tag=list(tags)))
        return [_queue_stats(q) for q in r.queues]

    # -- queues as managed objects ------------------------------------------

    async def create_queue(self, name: str, settings: Optional[QueueSettings] = None, *,
                           paused: bool = False) -> QueueSettings:
        """Add a queue with its own settings (None fields inherit) and
        return what it runs with. A queue that exists already raises
        AlreadyExists; a setting out of range InvalidField naming it; a
        dead_letter_queue that does not exist NotFound. Not retried once it
        may have reached the server (the retry would be AlreadyExists)."""
        req = apb.CreateQueueRequest(name=name, settings=(settings or QueueSettings()).to_proto(), paused=paused)
        r = await self._admin("create queue", "CreateQueue", req, _Policy.NOT_SENT)
        return QueueSettings.from_limits(r.effective)

    async def get_queue(self, name: str, *, stale: bool = False) -> QueueInfo:
        """One queue: its counts, its own settings and its effective ones;
        NotFound when there is no such queue."""
        r = await self._admin("get queue", "GetQueue", apb.GetQueueRequest(name=name, allow_stale=stale))
        return QueueInfo.from_proto(r)

    async def update_queue(self, name: str, settings: Optional[QueueSettings] = None, *,
                           inherit: Sequence[str] = (), paused: Optional[bool] = None) -> QueueSettings:
        """Change a queue: the set fields of ``settings`` replace its own,
        ``inherit`` names settings to drop (``"default_priority"``,
        ``"retry_delay_ms"``, ...) so the global value applies again,
        ``paused`` pauses or resumes it. Returns its effective settings;
        NotFound for an unknown queue. Idempotent, so retried."""
        req = apb.UpdateQueueRequest(name=name, settings=(settings or QueueSettings()).to_proto(),
                                     inherit=list(inherit))
        if paused is not None:
            req.paused = paused
        r = await self._admin("update queue", "UpdateQueue", req)
        return QueueSettings.from_limits(r.effective)

    async def delete_queue(self, name: str, *, force: bool = False) -> QueueRemoval:
        """Remove a queue. One holding jobs or dead letters raises
        WrongState unless ``force``, which removes them and counts them.
        Not retried once it may have reached the server."""
        r = await self._admin("delete queue", "DeleteQueue", apb.DeleteQueueRequest(name=name, force=force),
                              _Policy.NOT_SENT)
        return QueueRemoval(int(r.jobs_removed), int(r.dead_letters_removed))

    async def purge_queue(self, name: str, target: PurgeTarget) -> QueueRemoval:
        """Remove a queue's waiting jobs (reserved ones stay) or its dead
        letters, and count them. Not retried once it may have reached the
        server."""
        r = await self._admin("purge queue", "PurgeQueue",
                              apb.PurgeQueueRequest(name=name, target=apb.PurgeTarget.Name(int(target))),
                              _Policy.NOT_SENT)
        return QueueRemoval(int(r.jobs_removed), int(r.dead_letters_removed))

    async def list_jobs(self, queue: str, *, state: JobState, after_job_id: int = 0,
                        limit: int = 0, stale: bool = False) -> tuple[list[Job], int]:
        """A page of the queue's jobs in one state (SCHEDULED, READY,
        RESERVED, BLOCKED, or COMPLETED while the queue keeps completed
        jobs; the server lists one state at a time) and the after_job_id of
        the next page (0: no more)."""
        r = await self._admin("list jobs", "ListJobs", apb.ListJobsRequest(
            queue=queue, state=tpb.JobState.Name(int(state)), after_job_id=after_job_id, limit=limit,
            allow_stale=stale))
        return [Job.from_proto(j) for j in r.jobs], int(r.next_after_job_id)

    async def get_job(self, job_id: int, *, stale: bool = False) -> Job:
        """One job; NotFound when the server holds no such job."""
        r = await self._admin("get job", "GetJob", apb.GetJobRequest(job_id=job_id, allow_stale=stale))
        return Job.from_proto(r.job)

    async def parent_results(self, parents: Sequence[JobParent], *, stale: bool = False) -> list[ParentResult]:
        """The outcomes and results of ``parents``, a job's ``Job.parents``
        (a Worker's handler has them in ``delivery.job.parents``), in order.
        A delivery's and get_job's parents come with their kept results
        (``result_kept``), up to a bound per answer; for a completed parent
        whose result the answer left out (``result_omitted``), or that came
        from elsewhere (such as list_jobs), it makes a get_job of the
        parent, which needs a token with the viewer role. A callback
        enqueued after a batch's jobs (``after=...``,
        ``on_parent_failure=ParentFailure.RUN``) reads its members'
        outcomes and results so.

        A completed parent's result is there (``kept`` True) while its
        queue keeps completed jobs (``completed_retention_ms``); a parent
        that did not complete, or whose record is gone, has ``kept`` False
        and ``result`` b"". Any other failure of a get_job raises."""
        out: list[ParentResult] = []
        for p in parents:
            result, kept = b"", False
            if p.state == JobState.COMPLETED and p.result_kept and not p.result_omitted:
                result, kept = p.result, True  # carried by the answer
            elif p.state == JobState.COMPLETED:
                try:
                    j = await self.get_job(p.job_id, stale=stale)
                except NotFound:
                    pass  # completed, its record not kept
                else:
                    result, kept = j.result, True
            out.append(ParentResult(p.job_id, p.state, p.cause, p.ended, result, kept,
                                    result_kept=p.result_kept, result_omitted=p.result_omitted))
        return out

    async def list_dead_letters(self, queue: str = "", *, after_job_id: int = 0, limit: int = 0,
                                stale: bool = False) -> tuple[list[DeadLetterRecord], int]:
        """A page of retained dead letters, without removing them."""
        r = await self._admin("list dead letters", "ListDeadLetters", apb.ListDeadLettersRequest(
            queue=queue, after_job_id=after_job_id, limit=limit, allow_stale=stale))
        return [DeadLetterRecord.from_proto(x) for x in r.records], int(r.next_after_job_id)

    async def get_dead_letter(self, job_id: int, *, stale: bool = False) -> DeadLetterRecord:
        r = await self._admin("get dead letter", "GetDeadLetter",
                              apb.GetDeadLetterRequest(job_id=job_id, allow_stale=stale))
        return DeadLetterRecord.from_proto(r.record)

    @staticmethod
    def _actions(op: str, results: Sequence[tpb.JobActionResult]) -> list[ActionResult]:
        return [ActionResult(r.job_id, from_item_error(op, r.error.code, r.error.message, r.error.details)
                             if r.HasField("error") else None) for r in results]

    async def requeue_dead_letters(self, job_ids: Sequence[int]) -> list[ActionResult]:
        """Put records back Ready with their original id, attempts from 1."""
        op = "requeue dead letters"
        r = await self._admin(op, "RequeueDeadLetters", apb.RequeueDeadLettersRequest(job_ids=list(job_ids)))
        return self._actions(op, r.results)

    async def delete_dead_letters(self, job_ids: Sequence[int]) -> list[ActionResult]:
        """Remove records for good."""
        op = "delete dead letters"
        r = await self._admin(op, "DeleteDeadLetters", apb.DeleteDeadLettersRequest(job_ids=list(job_ids)))
        return self._actions(op, r.results)

    async def dead_letter_jobs(self, job_ids: Sequence[int], reason: str = "") -> list[ActionResult]:
        """Dead-letter live Ready or Scheduled jobs with cause admin."""
        op = "dead-letter jobs"
        r = await self._admin(op, "DeadLetterJobs", apb.DeadLetterJobsRequest(job_ids=list(job_ids), reason=reason))
        return self._actions(op, r.results)

    # -- actions on live jobs -----------------------------------------------

    async def delete_jobs(self, job_ids: Sequence[int]) -> list[ActionResult]:
        """Remove Ready or Scheduled jobs for good; a reserved one is
        WrongState in its result."""
        op = "delete jobs"
        r = await self._admin(op, "DeleteJobs", apb.DeleteJobsRequest(job_ids=list(job_ids)))
        return self._actions(op, r.results)

    async def run_jobs_now(self, job_ids: Sequence[int]) -> list[ActionResult]:
        """Make Scheduled jobs Ready now."""
        op = "run jobs now"
        r = await self._admin(op, "RunJobsNow", apb.RunJobsNowRequest(job_ids=list(job_ids)))
        return self._actions(op, r.results)

    async def reschedule_jobs(self, job_ids: Sequence[int], run_at: datetime) -> list[ActionResult]:
        """Hold Ready or Scheduled jobs until ``run_at`` (one at or before
        now makes them Ready); beyond the queue's horizon is
        ScheduledTooFar in the job's result."""
        op = "reschedule jobs"
        req = apb.RescheduleJobsRequest(job_ids=list(job_ids))
        req.run_at.CopyFrom(_to_ts(run_at))
        r = await self._admin(op, "RescheduleJobs", req)
        return self._actions(op, r.results)

    async def set_jobs_priority(self, job_ids: Sequence[int], priority: int) -> list[ActionResult]:
        """Give live jobs a priority (0..9); a Ready job takes its place by
        it and its original enqueue time."""
        op = "set jobs priority"
        r = await self._admin(op, "SetJobsPriority",
                              apb.SetJobsPriorityRequest(job_ids=list(job_ids), priority=int(priority)))
        return self._actions(op, r.results)

    async def cancel_jobs(self, job_ids: Sequence[int], *, delete: bool = False,
                          reason: str = "") -> list[ActionResult]:
        """Cancel Reserved jobs: each lease is revoked at once (the worker's
        next extend, ack or nack raises JobCancelled) and the job is
        dead-lettered with cause CANCELLED, or removed with ``delete``. A
        job no worker holds is WrongState in its result."""
        op = "cancel jobs"
        r = await self._admin(op, "CancelJobs", apb.CancelJobsRequest(job_ids=list(job_ids), delete=delete,
                                                                      reason=reason))
        return self._actions(op, r.results)

    # -- redrive ------------------------------------------------------------

    async def preview_redrive(self, options: RedriveOptions, *, sample: int = 0) -> RedrivePreview:
        """What start_redrive(options) would move, without starting it: the
        count and the first ``sample`` records (0: 10)."""
        r = await self._admin("preview redrive", "PreviewRedrive",
                              apb.PreviewRedriveRequest(redrive=options.to_proto(), sample=sample))
        return RedrivePreview(int(r.matching), tuple(DeadLetterRecord.from_proto(x) for x in r.sample))

    async def start_redrive(self, options: RedriveOptions) -> RedriveTask:
        """Start a redrive task over the dead letters failed by now that
        ``options.selection`` matches. Not retried once it may have reached
        the server (a retry would start a second task)."""
        r = await self._admin("start redrive", "StartRedrive", options.to_proto(), _Policy.NOT_SENT)
        return RedriveTask.from_proto(r.task)

    async def list_redrives(self, *, stale: bool = False) -> list[RedriveTask]:
        """The running and paused tasks and the last ended ones."""
        r = await self._admin("list redrives", "ListRedrives", apb.ListRedrivesRequest(allow_stale=stale))
        return [RedriveTask.from_proto(t) for t in r.tasks]

    async def get_redrive(self, task_id: int, *, stale: bool = False) -> RedriveTask:
        """One task or audit record; NotFound when there is none."""
        r = await self._admin("get redrive", "GetRedrive", apb.GetRedriveRequest(id=task_id, allow_stale=stale))
        return RedriveTask.from_proto(r.task)

    async def pause_redrive(self, task_id: int) -> RedriveTask:
        """Pause a running task; one in another state raises WrongState."""
        r = await self._admin("pause redrive", "PauseRedrive", apb.PauseRedriveRequest(id=task_id))
        return RedriveTask.from_proto(r.task)

    async def resume_redrive(self, task_id: int) -> RedriveTask:
        """Resume a paused task; one in another state raises WrongState."""
        r = await self._admin("resume redrive", "ResumeRedrive", apb.ResumeRedriveRequest(id=task_id))
        return RedriveTask.from_proto(r.task)

    async def cancel_redrive(self, task_id: int) -> RedriveTask:
        """End a running or paused task; what it moved stays moved."""
        r = await self._admin("cancel redrive", "CancelRedrive", apb.CancelRedriveRequest(id=task_id))
        return RedriveTask.from_proto(r.task)

    # -- queue pause --------------------------------------------------------

    async def pause_queue(self, queue: str) -> None:
        """Stop reserves from handing out the queue's jobs; enqueues go on."""
        await self._admin("pause queue", "PauseQueue", apb.PauseQueueRequest(queue=queue))

    async def resume_queue(self, queue: str) -> None:
        """Undo pause_queue."""
        await self._admin("resume queue", "ResumeQueue", apb.ResumeQueueRequest(queue=queue))

    # -- schedules ----------------------------------------------------------

    async def create_schedule(self, definition: ScheduleDefinition) -> Schedule:
        """Add a periodic schedule. One of that name existing raises
        AlreadyExists; a bad spec, zone or template InvalidField naming the
        field. Not retried once it may have reached the server (the retry
        would be AlreadyExists): UnknownOutcome then, and get_schedule
        settles it."""
        r = await self._admin("create schedule", "CreateSchedule",
                              apb.CreateScheduleRequest(schedule=definition.to_proto()), _Policy.NOT_SENT)
        return Schedule.from_proto(r.schedule)

    async def update_schedule(self, definition: ScheduleDefinition) -> Schedule:
        """Replace the named schedule's definition (``paused`` is ignored:
        it keeps its paused state, counters and last fired tick, so no tick
        fires twice). An unknown name raises NotFound."""
        r = await self._admin("update schedule", "UpdateSchedule",
                              apb.UpdateScheduleRequest(schedule=definition.to_proto()))
        return Schedule.from_proto(r.schedule)

    async def delete_schedule(self, name: str) -> None:
        """Remove a schedule; the jobs it fired stay. An unknown name raises
        NotFound. Not retried once it may have reached the server."""
        await self._admin("delete schedule", "DeleteSchedule", apb.DeleteScheduleRequest(name=name),
                          _Policy.NOT_SENT)

    async def get_schedule(self, name: str, *, next_fire_times: int = 0, stale: bool = False) -> Schedule:
        """One schedule with up to ``next_fire_times`` next ticks (0..100;
        0: the server's 5). An unknown name raises NotFound."""
        if not 0 <= next_fire_times <= 100:
            raise InvalidField("next_fire_times", f"next_fire_times must be 0..100, got {next_fire_times}",
                               "0..100", op="get schedule")
        r = await self._admin("get schedule", "GetSchedule", apb.GetScheduleRequest(
            name=name, next_fire_times=next_fire_times, allow_stale=stale))
        return Schedule.from_proto(r.schedule)

    async def list_schedules(self, *, next_fire_times: int = 0, stale: bool = False) -> list[Schedule]:
        """Every schedule by name, each with up to ``next_fire_times`` next
        ticks (0..100; 0: the server's 1)."""
        if not 0 <= next_fire_times <= 100:
            raise InvalidField("next_fire_times", f"next_fire_times must be 0..100, got {next_fire_times}",
                               "0..100", op="list schedules")
        r = await self._admin("list schedules", "ListSchedules", apb.ListSchedulesRequest(
            next_fire_times=next_fire_times, allow_stale=stale))
        return [Schedule.from_proto(x) for x in r.schedules]

    async def pause_schedule(self, name: str) -> Schedule:
        """Stop a schedule firing (pausing twice is pausing)."""
        r = await self._admin("pause schedule", "PauseSchedule", apb.PauseScheduleRequest(name=name))
        return Schedule.from_proto(r.schedule)

    async def resume_schedule(self, name: str) -> Schedule:
        """Restart a paused schedule from its first tick after now (the
        paused ticks are not caught up)."""
        r = await self._admin("resume schedule", "ResumeSchedule", apb.ResumeScheduleRequest(name=name))
        return Schedule.from_proto(r.schedule)

    async def cluster_status(self) -> ClusterStatus:
        """The cluster as the node the client talks to sees it: members,
        leader, raft term and indexes."""
        async def attempt(a: _Attempt) -> ClusterStatus:
            r = await self._unary(a, _cluster(a.channel).Status, cpb.StatusRequest())
            return ClusterStatus(
                self_node=_node(r.self), leader=_node(r.leader) if r.leader.id else None, state=r.state,
                term=r.term, commit_index=r.commit_index, applied_index=r.applied_index,
                last_log_index=r.last_log_index,
                members=tuple(ClusterMember(_node(m.node), m.voter, m.leader, m.healthy, m.last_contact)
                              for m in r.members))

        return await self._call("cluster status", _Policy.SAFE, attempt)

    async def transfer_leadership(self, to_node_id: str = "") -> None:
        """Hand leadership to another voter ("" lets the leader pick the
        most up-to-date one). Like a drain it is not retried once it may
        have reached the server (a second transfer would move it again)."""
        if not self._leader:
            await self.server_info()

        async def attempt(a: _Attempt) -> None:
            await self._unary(a, _cluster(a.channel).TransferLeadership,
                              cpb.TransferLeadershipRequest(to_node_id=to_node_id))

        await self._call("transfer leadership", _Policy.NOT_SENT, attempt)
        self._leader = ""  # whoever leads now, the next call finds out
