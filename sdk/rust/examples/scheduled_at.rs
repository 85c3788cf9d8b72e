// The spec's sample "scheduled and delayed jobs" (Priority & scheduling), verbatim: tests/spec_samples.rs
// runs it against a three-node cluster on localhost:50051 and checks what it did.
use std::time::{Duration, SystemTime};
use sepp_rs::client::SeppClient;
use sepp_rs::EnqueueRequest;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = SeppClient::connect("http://localhost:50051").await?;

    // No "delay" argument: schedule an absolute time, adding to now for a
    // relative delay.
    let run_at = SystemTime::now() + Duration::from_secs(60 * 60);
    let request = EnqueueRequest::new("reports", "daily_rollup")?
        .with_scheduled_at(run_at);

    client.enqueue(request).await?;
    Ok(())
}
