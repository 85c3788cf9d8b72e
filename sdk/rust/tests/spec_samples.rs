//! Every Rust sample of the spec pages, verbatim, run against a real
//! cluster and checked for what it did.
//!
//! The two whole programs (Priority & scheduling) are `examples/` and name
//! `http://localhost:50051`: each runs in a network namespace of its own
//! (`unshare -n`, which needs root or user namespaces), where a three-node
//! cluster listens on 127.0.0.1:50051-50053. The fragments (Retries &
//! dead-letter) are pasted below, at column 0 and unformatted, into
//! functions that give them the `client`, `job`, `err` and `ctx` they use.
//! `samples_are_the_spec_pages_verbatim` checks the copies against the
//! pages.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use sepp_rs::client::{ReserveOptions, SeppClient};
use sepp_rs::{DeadLetterCause, Delivery, EnqueueRequest, JobContext, JobState, Priority};

// ---- the whole programs, each in a network namespace ----

const IN_NETNS: &str = "SEPP_RS_SAMPLE_IN_NETNS";

/// Runs the test named test (this function's caller) again inside a fresh
/// network namespace, where it takes the other branch: see run_in_netns.
fn rerun_in_netns(test: &str) {
    let me = std::env::current_exe().expect("the test binary");
    let out = Command::new("unshare")
        .arg(if unsafe { libc::geteuid() } == 0 { "-n" } else { "-rn" })
        .arg(&me)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(IN_NETNS, "1")
        .output()
        .expect("unshare (util-linux) gives the sample its own localhost:50051");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} in its network namespace failed:\n{}", test, text);
    assert!(text.contains("1 passed"), "{} did not run in its namespace:\n{}", test, text);
}

/// The example binary cargo built next to this test's deps folder.
fn example(name: &str) -> PathBuf {
    let me = std::env::current_exe().expect("the test binary");
    let p = me.parent().and_then(Path::parent).expect("target/debug").join("examples").join(name);
    assert!(p.is_file(), "{} is missing: cargo test builds the examples", p.display());
    p
}

/// Inside the namespace: loopback up, a cluster on the ports the sample
/// expects, the sample run as is; returns the cluster and a client for the
/// checks.
async fn run_in_netns(sample: &str) -> (common::Cluster, SeppClient) {
    let up = Command::new("ip").args(["link", "set", "lo", "up"]).status().expect("ip (iproute2)");
    assert!(up.success(), "ip link set lo up");
    let ports = vec![50051, 8081, 7051, 50052, 8082, 7052, 50053, 8083, 7053];
    let cluster = common::Cluster::start(common::RETENTION, Some(ports));
    let client = cluster.client().await;
    let out = tokio::process::Command::new(example(sample)).output().await.expect("run the sample");
    assert!(
        out.status.success(),
        "sample {} failed: {}\n{}\n{}",
        sample,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    (cluster, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_max_sample() {
    if std::env::var_os(IN_NETNS).is_none() {
        return tokio::task::spawn_blocking(|| rerun_in_netns("priority_max_sample")).await.unwrap();
    }
    let (_cluster, client) = run_in_netns("priority_max").await;
    let ready = client.list_jobs("emails", JobState::Ready).await.unwrap();
    let got: Vec<(&str, u32)> = ready.iter().map(|j| (j.job_type.as_str(), j.priority)).collect();
    assert_eq!(got, vec![("password_reset", 9)]);
    assert_eq!(ready[0].scheduled_at, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_at_sample() {
    if std::env::var_os(IN_NETNS).is_none() {
        return tokio::task::spawn_blocking(|| rerun_in_netns("scheduled_at_sample")).await.unwrap();
    }
    let before = SystemTime::now();
    let (_cluster, client) = run_in_netns("scheduled_at").await;
    let after = SystemTime::now();
    let held = client.list_jobs("reports", JobState::Scheduled).await.unwrap();
    assert_eq!(held.len(), 1, "{:?}", held);
    assert_eq!(held[0].job_type, "daily_rollup");
    // One hour after the sample's now, which lies between before and after.
    let at = held[0].scheduled_at.expect("a scheduled time");
    let hour = Duration::from_secs(3600);
    assert!(at >= before + hour && at <= after + hour, "{:?} not an hour after [{:?}, {:?}]", at, before, after);
    assert!(client.list_jobs("reports", JobState::Ready).await.unwrap().is_empty());
}

// ---- the fragments, each given what it uses ----

/// The failure the first fragment classifies.
#[derive(Debug)]
enum MailerError {
    Transient,
    RateLimited,
    BadAddress,
}

impl MailerError {
    fn is_transient(&self) -> bool {
        matches!(self, MailerError::Transient)
    }

    fn is_rate_limited(&self) -> bool {
        matches!(self, MailerError::RateLimited)
    }
}

impl std::fmt::Display for MailerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mailer: {:?}", self)
    }
}

type SampleResult<T> = Result<T, Box<dyn std::error::Error>>;

#[rustfmt::skip]
async fn nack_directive_sample(client: &SeppClient, job: &Delivery, err: &MailerError) -> SampleResult<bool> {
use std::time::Duration;
use sepp_rs::client::RetryDirective;

// Pick a directive based on why the job failed.
let directive = if err.is_transient() {
    RetryDirective::Default                          // retry now
} else if err.is_rate_limited() {
    RetryDirective::After(Duration::from_secs(60))   // retry, but not yet
} else {
    RetryDirective::DeadLetter                        // unrecoverable, skip the rest
};

// True if this nack ended the job (DeadLetter, or the attempt limit was hit).
let dead_lettered = client.nack(&job.ctx, directive, err.to_string()).await?;
    Ok(dead_lettered)
}

#[rustfmt::skip]
async fn backoff_sample(client: &SeppClient, job: &Delivery) -> SampleResult<()> {
use std::time::Duration;
use sepp_rs::client::RetryDirective;

// Override the queue policy for this nack with a delay you compute.
let backoff = Duration::from_secs(2u64.pow(job.ctx.attempt));
client.nack(&job.ctx, RetryDirective::After(backoff), "retrying with backoff").await?;
    Ok(())
}

#[rustfmt::skip]
async fn max_attempts_sample(client: &SeppClient) -> SampleResult<()> {
use sepp_rs::EnqueueRequest;

// Override the queue default for this one job.
let request = EnqueueRequest::new("emails", "welcome")?.with_max_attempts(5);
client.enqueue(request).await?;
    Ok(())
}

#[rustfmt::skip]
#[allow(clippy::all)]
fn last_try_sample(ctx: &JobContext) {
// Inside a handler: ctx carries this delivery's place in the sequence.
if ctx.attempt == ctx.max_attempts {
    // Last try; a failure now dead-letters the job, so degrade gracefully.
}
}

#[rustfmt::skip]
async fn drain_sample(client: &SeppClient) -> SampleResult<()> {
// Drain up to 100 dead-lettered jobs from "emails" (this removes them).
let records = client.drain_dead_letters(Some("emails"), 100).await?;
for record in records {
    eprintln!(
        "{} died on attempt {} ({:?}): {}",
        record.job_id,
        record.final_attempt,
        record.cause,
        record.last_reason.as_deref().unwrap_or("no reason"),
    );

    // Replay the ones worth another go as a fresh job.
    client.enqueue(record.to_enqueue_request()).await?;
}
    Ok(())
}

fn one(max: u32) -> ReserveOptions {
    ReserveOptions {
        worker_id: "rs-spec".into(),
        max,
        lease: Some(Duration::from_secs(60)),
        wait: Duration::from_secs(2),
    }
}

/// Enqueues one job on queue and reserves it.
async fn delivery(client: &SeppClient, queue: &str, req: EnqueueRequest) -> Delivery {
    let id = client.enqueue(req).await.unwrap().job_id;
    let d = client.reserve(queue, one(1)).await.unwrap().remove(0);
    assert_eq!(d.ctx.job_id, id, "queue {} holds only this test's jobs", queue);
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nack_directive_sample_picks_by_the_failure() {
    let client = common::shared().client().await;
    let q = "rs-spec-directive";
    let cases = vec![
        (MailerError::Transient, false, JobState::Ready),
        (MailerError::RateLimited, false, JobState::Scheduled),
        (MailerError::BadAddress, true, JobState::Dead),
    ];
    for (err, want_dead, want_state) in cases {
        let d = delivery(&client, q, EnqueueRequest::new(q, "send").unwrap()).await;
        let dead = nack_directive_sample(&client, &d, &err).await.unwrap();
        assert_eq!(dead, want_dead, "{:?}", err);
        // Only nacked, so a job the server no longer has is a dead one.
        let state = match client.get_job(d.ctx.job_id).await {
            Ok(j) => j.state,
            Err(sepp_rs::Error::NotFound { .. }) => JobState::Dead,
            Err(e) => panic!("{}", e),
        };
        assert_eq!(state, want_state, "{:?}", err);
        if state == JobState::Ready {
            // Out of the way of the next case's reserve.
            let again = client.reserve(q, one(1)).await.unwrap().remove(0);
            client.ack(&again.ctx).await.unwrap();
        }
    }
    let records = client.drain_dead_letters(Some(q), 10).await.unwrap();
    let got: Vec<(DeadLetterCause, Option<String>)> = records.into_iter().map(|r| (r.cause, r.last_reason)).collect();
    assert_eq!(got, vec![(DeadLetterCause::Rejected, Some("mailer: BadAddress".to_string()))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_sample_delays_by_two_to_the_attempt() {
    let client = common::shared().client().await;
    let q = "rs-spec-backoff";
    let d = delivery(&client, q, EnqueueRequest::new(q, "t").unwrap()).await;
    assert_eq!(d.ctx.attempt, 1);
    backoff_sample(&client, &d).await.unwrap();
    let job = client.get_job(d.ctx.job_id).await.unwrap();
    assert_eq!(job.state, JobState::Scheduled);
    assert_eq!(job.last_reason.as_deref(), Some("retrying with backoff"));
    // Promoted once the 2 s are up: reserve waits for it.
    let again = client
        .reserve(
            q,
            ReserveOptions {
                wait: Duration::from_secs(20),
                ..one(1)
            },
        )
        .await
        .unwrap()
        .remove(0);
    assert_eq!((again.ctx.job_id, again.ctx.attempt), (d.ctx.job_id, 2));
    client.ack(&again.ctx).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_try_sample_reads_the_attempts() {
    let client = common::shared().client().await;
    let q = "rs-spec-last";
    let d = delivery(&client, q, EnqueueRequest::new(q, "t").unwrap().with_max_attempts(1)).await;
    assert_eq!((d.ctx.attempt, d.ctx.max_attempts), (1, 1), "the last try, as the sample's branch takes it");
    last_try_sample(&d.ctx);
    client.ack(&d.ctx).await.unwrap();
}

/// The max_attempts and the drain samples share the queue "emails", so
/// they run in this one test, one after the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_attempts_and_drain_samples_on_emails() {
    let client = common::shared().client().await;
    max_attempts_sample(&client).await.unwrap();
    let welcome: Vec<_> = client.list_jobs("emails", JobState::Ready).await.unwrap();
    let got: Vec<(&str, u32)> = welcome.iter().map(|j| (j.job_type.as_str(), j.max_attempts)).collect();
    assert_eq!(got, vec![("welcome", 5)]);

    // Two dead letters on "emails", ahead of "welcome" by priority.
    let rejected = delivery(&client, "emails", EnqueueRequest::new("emails", "bounce").unwrap().with_priority(Priority::MAX).with_payload(b"r".to_vec())).await;
    assert!(client.nack(&rejected.ctx, sepp_rs::RetryDirective::DeadLetter, "bad address").await.unwrap());
    let exhausted = delivery(&client, "emails", EnqueueRequest::new("emails", "bounce").unwrap().with_priority(Priority::MAX).with_max_attempts(1)).await;
    assert!(client.nack(&exhausted.ctx, sepp_rs::RetryDirective::Default, "timeout").await.unwrap());

    drain_sample(&client).await.unwrap();
    assert!(client.drain_dead_letters(Some("emails"), 100).await.unwrap().is_empty(), "the sample drained them");
    let mut ready = client.list_jobs("emails", JobState::Ready).await.unwrap();
    ready.retain(|j| j.job_type == "bounce");
    let old = [rejected.ctx.job_id, exhausted.ctx.job_id];
    assert_eq!(ready.len(), 2, "both replayed: {:?}", ready);
    for j in &ready {
        assert!(!old.contains(&j.id), "a replay is a fresh job");
        assert_eq!(j.priority, 9);
    }
    let mut payloads: Vec<&[u8]> = ready.iter().map(|j| j.payload.as_slice()).collect();
    payloads.sort();
    assert_eq!(payloads, vec![&b""[..], &b"r"[..]]);
}

// ---- the copies against the pages ----

/// The Rust samples of a spec page: from a `use ` or `// ` line that
/// follows prose (a line ending in '.' or ':') through the blank line after
/// which the text stops looking like Rust.
fn rust_samples(page: &str) -> Vec<String> {
    fn is_code(l: &str) -> bool {
        const STARTS: [&str; 14] = [" ", "use ", "//", "#[", "async fn ", "fn ", "let ", "if ", "else", "}", ")", "client.", "for ", "Ok("];
        STARTS.iter().any(|s| l.starts_with(s))
    }
    let lines: Vec<&str> = page.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let prev = lines[..i].iter().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim_end());
        let starts = lines[i].starts_with("use sepp_rs") || lines[i].starts_with("use std") || lines[i].starts_with("// ");
        if !(starts && prev.map_or(false, |p| p.ends_with('.') || p.ends_with(':'))) {
            i += 1;
            continue;
        }
        let mut end = i;
        let mut j = i;
        while j < lines.len() {
            if lines[j].trim().is_empty() {
                match lines[j + 1..].iter().find(|l| !l.trim().is_empty()) {
                    Some(next) if is_code(next) => {
                        j += 1;
                        continue;
                    }
                    _ => break,
                }
            }
            if !is_code(lines[j]) {
                break;
            }
            end = j;
            j += 1;
        }
        out.push(lines[i..=end].join("\n"));
        i = end + 1;
    }
    out
}

#[test]
fn samples_are_the_spec_pages_verbatim() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copies = [
        std::fs::read_to_string(here.join("tests/spec_samples.rs")).unwrap(),
        std::fs::read_to_string(here.join("examples/priority_max.rs")).unwrap(),
        std::fs::read_to_string(here.join("examples/scheduled_at.rs")).unwrap(),
    ]
    .join("\n");
    let spec_dir = std::env::var("SEPP_SPEC_DIR").unwrap_or_default();
    if spec_dir.is_empty() {
        // The pages live outside the repository; the copies stand alone.
        assert!(copies.contains("client.drain_dead_letters(Some(\"emails\"), 100)"));
        return;
    }
    let spec = PathBuf::from(&spec_dir);
    assert!(spec.is_dir(), "SEPP_SPEC_DIR {:?} is not a folder", spec_dir);
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&spec).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().map_or(false, |x| x == "txt")).collect();
    pages.sort();
    let mut found = 0;
    for page in pages {
        for sample in rust_samples(&std::fs::read_to_string(&page).unwrap()) {
            found += 1;
            assert!(copies.contains(&sample), "{}: this sample has no verbatim copy here:\n{}", page.display(), sample);
        }
    }
    assert_eq!(found, 7, "the spec pages' Rust samples of the sepp SDK");
}
