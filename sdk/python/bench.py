"""Throughput of the Python SDK against a local three-node cluster.

Starts `sepp dev --nodes 3` (the binary given, or bin/sepp), then measures
jobs per second of:
  enqueue   client.enqueue from --tasks concurrent tasks (one call per job)
  producer  Producer.enqueue_nowait, a window of --window outstanding jobs
  worker    a Worker (--concurrency, no-op handler) draining the producer's jobs
and prints them. A figure, not a test: nothing is asserted.

    /usr/bin/python3 bench.py --binary ../../bin/sepp --jobs 20000
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import subprocess
import time
from collections import deque
from datetime import timedelta
from pathlib import Path

from sepp import Delivery, EnqueueRequest, EnqueueResult, SeppClient, Worker


def start_dev(binary: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """`sepp dev --nodes 3` and the gRPC addresses it prints."""
    p = subprocess.Popen([str(binary), "dev", "--nodes", "3"], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    addrs: list[str] = []
    for line in p.stdout:
        m = re.search(r"grpc (\S+)", line)
        if m:
            addrs.append("http://" + m.group(1))
        if line.startswith("Ctrl-C") or len(addrs) == 3 and "pid" not in line:
            break
    if len(addrs) != 3:
        p.kill()
        raise SystemExit(f"sepp dev did not print three nodes: {addrs}")
    return p, addrs


async def bench_enqueue(client: SeppClient, queue: str, jobs: int, tasks: int) -> float:
    left = [jobs]

    async def one() -> None:
        while left[0] > 0:
            left[0] -= 1
            await client.enqueue(EnqueueRequest(queue, "bench", b"x" * 64))

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(tasks)))
    return jobs / (time.perf_counter() - start)


async def bench_producer(client: SeppClient, queue: str, jobs: int, window: int) -> float:
    start = time.perf_counter()
    async with client.producer() as producer:
        outstanding: deque[asyncio.Future[EnqueueResult]] = deque()
        for _ in range(jobs):
            if len(outstanding) >= window:
                await outstanding.popleft()
            outstanding.append(await producer.enqueue_nowait(EnqueueRequest(queue, "bench", b"x" * 64)))
        for f in outstanding:
            await f
    return jobs / (time.perf_counter() - start)


async def bench_worker(client: SeppClient, queue: str, jobs: int, concurrency: int) -> float:
    done = asyncio.Event()
    count = [0]

    async def handle(d: Delivery) -> None:
        count[0] += 1
        if count[0] >= jobs:
            done.set()

    worker = Worker(client, concurrency=concurrency, max_reserve=64, wait=timedelta(milliseconds=500))
    worker.handle(queue, "bench", handle)
    start = time.perf_counter()
    async with worker:
        await done.wait()
        elapsed = time.perf_counter() - start
    return jobs / elapsed


async def run(args: argparse.Namespace, addrs: list[str]) -> None:
    async with await SeppClient.connect(addrs) as client:
        await client.server_info()
        c0 = time.process_time()
        e = await bench_enqueue(client, "bench-enqueue", args.jobs // 4, args.tasks)
        c1 = time.process_time()
        p = await bench_producer(client, "bench", args.jobs, args.window)
        c2 = time.process_time()
        w = await bench_worker(client, "bench", args.jobs, args.concurrency)
        c3 = time.process_time()
        # The client process's own CPU per job: what the SDK costs, apart
        # from the cluster (which shares the machine).
        us = [1e6 * (c1 - c0) / (args.jobs // 4), 1e6 * (c2 - c1) / args.jobs, 1e6 * (c3 - c2) / args.jobs]
        print(f"enqueue   {e:9.0f} jobs/s  client cpu {us[0]:5.0f} us/job  "
              f"({args.jobs // 4} jobs, {args.tasks} tasks, one Enqueue call each)")
        print(f"producer  {p:9.0f} jobs/s  client cpu {us[1]:5.0f} us/job  "
              f"({args.jobs} jobs, window {args.window}, batches of up to 256)")
        print(f"worker    {w:9.0f} jobs/s  client cpu {us[2]:5.0f} us/job  "
              f"({args.jobs} jobs, concurrency {args.concurrency}, reserve up to 64, acks coalesced)")


def main() -> None:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", type=Path, default=here.parents[1] / "bin" / "sepp")
    ap.add_argument("--jobs", type=int, default=20000)
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--window", type=int, default=2048)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    dev, addrs = start_dev(args.binary)
    try:
        asyncio.run(run(args, addrs))
    finally:
        dev.send_signal(signal.SIGINT)
        try:
            dev.wait(timeout=30)
        except subprocess.TimeoutExpired:
            dev.kill()
            dev.wait()


if __name__ == "__main__":
    main()
