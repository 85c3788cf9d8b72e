import asyncio
from sepp import SeppClient, EnqueueRequest, Priority

async def main() -> None:
    client = await SeppClient.connect("http://localhost:50051")

    # MAX is the highest priority (9); it jumps ahead of anything lower on the queue.
    request = EnqueueRequest(
        "emails",
        "password_reset",
        priority=Priority.MAX,
    )

    await client.enqueue(request)
