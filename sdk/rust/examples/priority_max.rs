// The spec's sample "priority levels 0-9" (Priority & scheduling), verbatim: tests/spec_samples.rs
// runs it against a three-node cluster on localhost:50051 and checks what it did.
use sepp_rs::client::SeppClient;
use sepp_rs::{EnqueueRequest, Priority};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = SeppClient::connect("http://localhost:50051").await?;

    // MAX is the highest priority (9); it jumps ahead of anything lower on the queue.
    let request = EnqueueRequest::new("emails", "password_reset")?
        .with_priority(Priority::MAX);

    client.enqueue(request).await?;
    Ok(())
}
