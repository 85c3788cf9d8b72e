"""Kill the leader's process while a Producer and a Worker run: no job is
lost and none is enqueued or processed twice."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import pytest

from sepp import Delivery, EnqueueRequest, EnqueueResult, JobState, SeppClient, Worker

from cluster import Cluster
from conftest import wait_leader

N = 400


@pytest.fixture
def own_cluster(binary: Path) -> Iterator[Cluster]:
    c = Cluster.start(binary, 3)
    try:
        yield c
    finally:
        c.stop()


async def test_failover_loses_and_duplicates_nothing(own_cluster: Cluster) -> None:
    cluster = own_cluster
    await wait_leader(cluster.addrs)
    processed: Counter[bytes] = Counter()
    errors: list[BaseException] = []

    async def handle(d: Delivery) -> None:
        processed[d.job.payload] += 1

    async with await SeppClient.connect(cluster.addrs, retry_timeout=30) as client:
        leader = (await client.server_info()).leader_addr
        worker = Worker(client, concurrency=8, wait=timedelta(milliseconds=500), on_error=errors.append)
        worker.handle("failover", "job", handle)
        await worker.start()
        results: list[EnqueueResult] = []
        async with client.producer(max_batch=32) as producer:
            # The head in one go; the tail from eight feeders that each wait
            # for a job's result before the next, so it is still flowing
            # when the leader dies.
            head = [await producer.enqueue_nowait(EnqueueRequest("failover", "job", str(i).encode()))
                    for i in range(N // 4)]
            results.extend(await asyncio.gather(*head))
            todo = iter(range(N // 4, N))

            async def feeder() -> None:
                for i in todo:
                    results.append(await producer.enqueue(EnqueueRequest("failover", "job", str(i).encode())))

            tail = asyncio.gather(*(feeder() for _ in range(8)))
            loop = asyncio.get_running_loop()
            end = loop.time() + 60
            while len(processed) < N // 8:
                assert loop.time() < end, f"the worker processed {len(processed)} jobs before the kill"
                await asyncio.sleep(0.01)
            killed_at = (len(processed), len(results))
            cluster.kill(cluster.index_of(leader))
            await tail

        async def all_seen() -> bool:
            return len(processed) == N

        end = loop.time() + 90
        while not await all_seen():
            assert loop.time() < end, f"processed {len(processed)} of {N}"
            await asyncio.sleep(0.1)
        await worker.stop()

        print(f"leader killed with {killed_at[0]} jobs processed and {killed_at[1]} enqueues confirmed of {N}")
        new_leader = (await client.server_info()).leader_addr
        assert new_leader != leader
        assert len(results) == N and len({r.job_id for r in results}) == N
        assert not any(r.duplicate for r in results)
        dup = {k: v for k, v in processed.items() if v != 1}
        assert dup == {}, f"processed more than once: {dup}"
        assert set(processed) == {str(i).encode() for i in range(N)}
        for st in (JobState.READY, JobState.RESERVED, JobState.SCHEDULED):
            jobs, _ = await client.list_jobs("failover", state=st)
            assert jobs == [], f"{len(jobs)} jobs left {st}"


async def test_frozen_leader_is_left_for_the_new_one(own_cluster: Cluster) -> None:
    """A leader that stops answering without closing its connections
    (SIGSTOP): the attempt would wait out its timeout (here 120 s; the
    45 s deadline fails the test then), but the leader probe asks the other
    nodes, learns the new leader and moves."""
    cluster = own_cluster
    await wait_leader(cluster.addrs)
    async with await SeppClient.connect(cluster.addrs, attempt_timeout=120, retry_timeout=120) as client:
        leader = (await client.server_info()).leader_addr
        # A call the leader answers itself: the connection to it is up, so
        # the next request is sent to the frozen process and hangs there.
        await client.enqueue(EnqueueRequest("frozen-warmup", "x"))
        assert client.leader == leader
        i = cluster.index_of(leader)
        cluster.signal(i, signal.SIGSTOP)
        try:
            res = await asyncio.wait_for(client.enqueue(EnqueueRequest("frozen", "x")), 45)
        finally:
            cluster.signal(i, signal.SIGCONT)
        assert client.leader != leader
        (d,) = await client.reserve("frozen")
        assert d.job.id == res.job_id
        await client.ack(d.ctx)


async def test_cluster_status_and_transfer_leadership(own_cluster: Cluster) -> None:
    cluster = own_cluster
    await wait_leader(cluster.addrs)
    async with await SeppClient.connect(cluster.addrs) as client:
        st = await client.cluster_status()
        assert sorted(m.node.id for m in st.members) == ["sepp-1", "sepp-2", "sepp-3"]
        assert all(m.voter for m in st.members) and sum(m.leader for m in st.members) == 1
        assert st.leader is not None
        leader = st.leader
        target = next(m.node for m in st.members if not m.leader)
        await client.transfer_leadership(target.id)
        info = await client.server_info()
        assert (info.leader_id, info.leader_addr) == (target.id, target.grpc_addr) != (leader.id, leader.grpc_addr)
        res = await client.enqueue(EnqueueRequest("moved", "x"))
        assert client.leader == target.grpc_addr and res.job_id > 0
