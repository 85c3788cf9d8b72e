import asyncio
from datetime import datetime, timedelta, timezone
from sepp import SeppClient, EnqueueRequest

async def main() -> None:
    client = await SeppClient.connect("http://localhost:50051")

    # No "delay" argument: schedule an absolute time, adding to now for a
    # relative delay.
    run_at = datetime.now(timezone.utc) + timedelta(hours=1)
    request = EnqueueRequest("reports", "daily_rollup", scheduled_at=run_at)

    await client.enqueue(request)
