from sepp import EnqueueRequest, JobState, Priority, SeppClient


async def test_enqueue_reserve_ack(client: SeppClient) -> None:
    res = await client.enqueue(EnqueueRequest("smoke", "t", b"hi", priority=Priority.P5))
    assert res.state == JobState.READY and not res.duplicate
    ds = await client.reserve("smoke", max=1)
    assert [d.job.id for d in ds] == [res.job_id]
    assert ds[0].job.payload == b"hi" and ds[0].job.priority == 5
    await client.ack(ds[0].ctx)
