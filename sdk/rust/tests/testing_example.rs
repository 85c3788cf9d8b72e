//! Testing code that uses sepp with `sepp_rs::testing::TestServer` (cargo
//! feature `testing`): each test gets a real single-node server, on free
//! ports in a temporary folder, killed and removed when it drops. The file
//! is self-contained (the public API and tokio alone), so it runs as is in
//! a project of yours: `make check-packages` runs it in a fresh cargo
//! project that depends on the packaged crate.

use std::time::Duration;

use sepp_rs::client::{ReserveOptions, RetryDirective, SeppClient};
use sepp_rs::testing::TestServer;
use sepp_rs::{Delivery, EnqueueRequest, HandlerError, Worker, WorkerOptions};

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

/// A handler under test: a job without an address cannot succeed.
async fn welcome(job: Delivery) -> Result<(), HandlerError> {
    if job.job.payload.is_empty() {
        return Err(HandlerError::permanent("no address"));
    }
    Ok(())
}

#[tokio::test]
async fn a_worker_acks_good_jobs_and_dead_letters_bad_ones() {
    let server = TestServer::builder().config(EMAILS).start().await.expect("start sepp");
    let client = server.client().await.expect("connect");

    send_welcome(&client, "ada@example.com").await.unwrap();
    let bad = send_welcome(&client, "").await.unwrap();
    let opts = WorkerOptions { concurrency: 2, wait: Duration::from_millis(200), ..Default::default() };
    let mut worker = Worker::new(client.clone(), opts);
    worker.handle("emails", "welcome", welcome);
    let running = worker.start().unwrap();
    let mut records = Vec::new();
    for _ in 0..100 {
        records.extend(client.drain_dead_letters(Some("emails"), 10).await.unwrap());
        if !records.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(running.stop(Duration::from_secs(10)).await, "the worker stopped in time");
    let got: Vec<_> = records.iter().map(|r| (r.job_id, r.last_reason.as_deref())).collect();
    assert_eq!(got, vec![(bad, Some("no address"))], "{}", server.logs());
}
