"""Run one spec sample verbatim against a cluster on localhost:50051.

Meant to run inside a fresh network namespace (unshare -n), where port
50051 is certainly free: brings loopback up, starts three nodes on
127.0.0.1:50051-50053, runs the sample's main(), then prints as JSON what
the cluster holds, for test_spec_samples.py to check.
Usage: run_sample.py SEPP_BINARY SAMPLE.py
"""

from __future__ import annotations

import asyncio
import json
import runpy
import subprocess
import sys
from pathlib import Path

from cluster import Cluster
from sepp import JobState, SeppClient


async def observe() -> dict[str, object]:
    async with await SeppClient.connect("http://127.0.0.1:50051", retry_timeout=60) as c:
        await c.server_info()
        out: dict[str, object] = {}
        for q in await c.list_queues():
            jobs = []
            for st in (JobState.READY, JobState.SCHEDULED):
                jobs += (await c.list_jobs(q.name, state=st))[0]
            out[q.name] = [{"job_type": j.job_type, "priority": j.priority, "state": str(j.state),
                            "scheduled_at": j.scheduled_at.timestamp() if j.scheduled_at else None,
                            "enqueued_at": j.enqueued_at.timestamp() if j.enqueued_at else None}
                           for j in jobs]
        return out


def main() -> None:
    binary, sample = Path(sys.argv[1]), Path(sys.argv[2])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    ports = [p for i in range(3) for p in (50051 + i, 8081 + i, 7051 + i)]
    c = Cluster.start(binary, 3, ports=ports)
    try:
        asyncio.run(wait())
        ns = runpy.run_path(str(sample), run_name="sample")
        asyncio.run(ns["main"]())
        print(json.dumps(asyncio.run(observe())))
    finally:
        c.stop()


async def wait() -> None:
    async with await SeppClient.connect("http://127.0.0.1:50051", "http://127.0.0.1:50052",
                                        "http://127.0.0.1:50053", retry_timeout=60) as c:
        await c.server_info()


if __name__ == "__main__":
    main()
