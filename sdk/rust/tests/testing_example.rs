//! Testing code that uses sepp with `sepp_rs::testing::TestServer` (cargo
//! feature `testing`): each test gets a real single-node server, on free
//! ports in a temporary folder, killed and removed when it drops. The file
//! is self-contained (the public API and tokio alone), so it runs as is in
//! a project of yours: `make check-packages` runs it in a fresh cargo
//! project that depends on the packaged crate.

use std::time::Duration;

use sepp_rs::client::{ReserveOptions, RetryDirective, SeppClient};
use sepp_rs::testing::TestServer;
use sepp_rs::EnqueueRequest;

const EMAILS: &str = r#"
[storage]
dead_letter_retention_ms = 3600000

[[queues]]
name = "emails"
default_max_attempts = 2
"#;

/// Code under test: it enqueues a job.
async fn send_welcome(client: &SeppClient, address: &str) -> Result<u64, sepp_rs::Error> {
    let request = EnqueueRequest::new("emails", "welcome")?.with_payload(address);
    Ok(client.enqueue(request).await?.job_id)
}

fn wait() -> ReserveOptions {
    ReserveOptions {
        wait: Duration::from_secs(5),
        ..ReserveOptions::default()
    }
}

#[tokio::test]
async fn send_welcome_enqueues_a_job() {
    let server = TestServer::builder().config(EMAILS).start().await.expect("start sepp");
    let client = server.client().await.expect("connect");

    let id = send_welcome(&client, "ada@example.com").await.unwrap();
    let jobs = client.reserve("emails", wait()).await.unwrap();
    assert_eq!(jobs.len(), 1, "{}", server.logs());
    assert_eq!((jobs[0].ctx.job_id, jobs[0].job.payload.as_slice()), (id, &b"ada@example.com"[..]));
    // The queue's config reached the server: two attempts, not three.
    assert_eq!(jobs[0].ctx.max_attempts, 2);
    client.ack(&jobs[0].ctx).await.unwrap();
}

#[tokio::test]
async fn a_job_that_fails_twice_ends_in_the_dead_letters() {
    let server = TestServer::builder().config(EMAILS).start().await.expect("start sepp");
    let client = server.client().await.expect("connect");

    let id = send_welcome(&client, "").await.unwrap();
    let mut dead = false;
    for _ in 0..2 {
        let jobs = client.reserve("emails", wait()).await.unwrap();
        assert_eq!(jobs.len(), 1);
        dead = client.nack(&jobs[0].ctx, RetryDirective::Default, "no address").await.unwrap();
    }
    assert!(dead, "the second nack dead-lettered the job");
    let records = client.drain_dead_letters(Some("emails"), 10).await.unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].job_id, records[0].last_reason.as_deref()), (id, Some("no address")));
}
