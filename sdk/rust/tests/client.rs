//! Each behaviour of the client and the worker, against a real local
//! three-node cluster (one for the whole file, each test with queues of its
//! own), and the retry rules against a fake server that drops answers.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use prost::Message;
use sepp_rs::client::{ReserveOptions, RetryDirective, SeppClient};
use sepp_rs::{pb, ClientOptions, Completion, DeadLetterCause, EnqueueRequest, Error, HandlerError, HandlerFuture, InstrumentHook, JobState, Priority, Progress, QueueSettings, TraceContext, TraceInjector, UniqueOptions, Worker, WorkerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn reserve_opts(max: u32) -> ReserveOptions {
    ReserveOptions {
        worker_id: "rs-test".into(),
        max,
        lease: Some(Duration::from_secs(60)),
        wait: Duration::from_secs(2),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_orders_reserves_and_fifo_within_a_level() {
    let client = common::shared().client().await;
    let q = "rs-priority";
    let mut ids = Vec::new();
    for (i, p) in [Priority::P0, Priority::MAX, Priority::P5, Priority::P5].iter().enumerate() {
        let r = client
            .enqueue(EnqueueRequest::new(q, "t").unwrap().with_priority(*p).with_payload(vec![i as u8]))
            .await
            .unwrap();
        assert_eq!(r.state, JobState::Ready);
        assert!(!r.duplicate);
        ids.push(r.job_id);
    }
    let got = client.reserve(q, reserve_opts(4)).await.unwrap();
    let order: Vec<(u32, u64)> = got.iter().map(|d| (d.job.priority, d.ctx.job_id)).collect();
    assert_eq!(order, vec![(9, ids[1]), (5, ids[2]), (5, ids[3]), (0, ids[0])]);
    for d in &got {
        assert_eq!(d.ctx.attempt, 1);
        assert_eq!(d.ctx.max_attempts, 3, "the global default_max_attempts");
        client.ack(&d.ctx).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_too_far_carries_the_horizon_and_the_time_asked_for() {
    let client = common::shared().client().await;
    let asked = SystemTime::now() + Duration::from_secs(31 * 24 * 3600);
    let err = client
        .enqueue(EnqueueRequest::new("rs-horizon", "t").unwrap().with_scheduled_at(asked))
        .await
        .unwrap_err();
    match &err {
        Error::ScheduledTooFar {
            queue,
            horizon,
            requested,
            latest_allowed,
            ..
        } => {
            assert_eq!(queue, "rs-horizon");
            assert_eq!(*horizon, Duration::from_secs(30 * 24 * 3600));
            let off = requested.duration_since(asked).unwrap_or_else(|e| e.duration());
            assert!(off < Duration::from_millis(1), "requested {:?}, asked {:?}", requested, asked);
            assert!(*latest_allowed < asked && *latest_allowed > SystemTime::now());
        }
        other => panic!("want ScheduledTooFar, got {:?}", other),
    }
    assert!(err.to_string().contains("horizon 2592000000 ms"), "{}", err);

    // Within the horizon the job waits, Scheduled.
    let r = client
        .enqueue(EnqueueRequest::new("rs-horizon", "t").unwrap().with_scheduled_at(SystemTime::now() + Duration::from_secs(3600)))
        .await
        .unwrap();
    assert_eq!(r.state, JobState::Scheduled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_name_the_field() {
    let client = common::shared().client().await;
    let long = "q".repeat(10_000);
    match client.enqueue(EnqueueRequest::new(long.as_str(), "t").unwrap()).await {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "queue"),
        other => panic!("want InvalidArgument on queue, got {:?}", other),
    }
    match EnqueueRequest::new("q", "") {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "job_type"),
        other => panic!("want InvalidArgument on job_type, got {:?}", other),
    }
    let results = client
        .enqueue_batch(vec![EnqueueRequest::new("rs-batch", "t").unwrap(), EnqueueRequest::new(long.as_str(), "t").unwrap()])
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
    assert!(results[0].is_ok(), "{:?}", results[0]);
    match &results[1] {
        Err(Error::InvalidArgument { field, .. }) => assert!(field.ends_with("queue"), "{}", field),
        other => panic!("want InvalidArgument, got {:?}", other),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_key_returns_the_first_job() {
    let client = common::shared().client().await;
    let req = EnqueueRequest::new("rs-idem", "t").unwrap().with_idempotency_key("rs-key-1");
    let first = client.enqueue(req.clone()).await.unwrap();
    let again = client.enqueue(req).await.unwrap();
    assert_eq!(again.job_id, first.job_id);
    assert!(!first.duplicate);
    assert!(again.duplicate);
    assert_eq!(again.idempotency_key, "rs-key-1");
    let made = client.enqueue(EnqueueRequest::new("rs-idem", "t").unwrap()).await.unwrap();
    assert_eq!(made.idempotency_key.len(), 32);
    assert_ne!(made.job_id, first.job_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_ack_release_extend_and_lease_lost() {
    let client = common::shared().client().await;
    let q = "rs-lease";
    client.enqueue(EnqueueRequest::new(q, "t").unwrap()).await.unwrap();
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    let deadline = client.extend_lease(&d.ctx, Duration::from_secs(120)).await.unwrap();
    assert!(deadline > SystemTime::now() + Duration::from_secs(100));

    // A release burns no attempt.
    client.release(&d.ctx).await.unwrap();
    let again = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    assert_eq!(again.ctx.job_id, d.ctx.job_id);
    assert_eq!(again.ctx.attempt, 1);
    match client.ack(&d.ctx).await {
        Err(Error::LeaseLost { op, .. }) => assert_eq!(op, "ack"),
        other => panic!("the released delivery's lease: want LeaseLost, got {:?}", other),
    }
    client.ack(&again.ctx).await.unwrap();
    match client.ack(&again.ctx).await {
        Err(Error::LeaseLost { .. }) => {}
        other => panic!("a second ack: want LeaseLost, got {:?}", other),
    }
    match client.get_job(again.ctx.job_id).await {
        Err(Error::NotFound { .. }) => {}
        other => panic!("an acked job: want NotFound, got {:?}", other),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_job_outcomes() {
    let client = common::shared().client().await;
    let q = "rs-wait";
    let res = client.enqueue(EnqueueRequest::new(q, "resize").unwrap()).await.unwrap();
    let polled = client.poll_job(res.job_id, Duration::from_millis(50)).await.unwrap();
    assert_eq!((polled.terminal, polled.state, polled.job.id), (false, JobState::Ready, res.job_id));

    let waiter = client.clone();
    let waiting = tokio::spawn(async move { waiter.wait_job(res.job_id).await });
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    assert!(client.nack(&d.ctx, RetryDirective::DeadLetter, "corrupt image").await.unwrap());
    let out = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the wait woke").unwrap().unwrap();
    assert_eq!((out.terminal, out.state, out.cause), (true, JobState::Dead, DeadLetterCause::Rejected));
    assert!(out.finished_at.is_some());

    match client.wait_job(res.job_id + 100_000).await {
        Err(Error::NotFound { .. }) => {}
        other => panic!("an unknown job: want NotFound, got {:?}", other),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_with_result_is_read_back() {
    let client = common::shared().client().await;
    // rs-kept keeps completed jobs an hour (common::RETENTION). A new cluster's first leader
    // holds a setting back until it has learned that every member applies it, completed
    // retention among them: wait until the file's setting is in force.
    let c = client.clone();
    common::wait_for("rs-kept's completed retention in force", Duration::from_secs(30), || {
        let c = c.clone();
        async move { matches!(c.get_queue("rs-kept").await, Ok(q) if q.effective.completed_retention == Some(Duration::from_secs(3600))) }
    })
    .await;
    let res = client.enqueue(EnqueueRequest::new("rs-kept", "resize").unwrap()).await.unwrap();
    let waiter = client.clone();
    let waiting = tokio::spawn(async move { waiter.wait_job(res.job_id).await });
    let d = client.reserve("rs-kept", reserve_opts(1)).await.unwrap().remove(0);
    client.ack_with_result(&d.ctx, b"{\"width\":640}".to_vec()).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the wait woke").unwrap().unwrap();
    assert_eq!((out.terminal, out.state, out.result.as_slice()), (true, JobState::Completed, &b"{\"width\":640}"[..]));
    let job = client.get_job(res.job_id).await.unwrap();
    assert_eq!((job.state, job.result.as_slice()), (JobState::Completed, &b"{\"width\":640}"[..]));
    assert!(job.completed_at.is_some());

    // A queue that keeps none refuses a result; the lease still holds.
    client.enqueue(EnqueueRequest::new("rs-not-kept", "resize").unwrap()).await.unwrap();
    let d = client.reserve("rs-not-kept", reserve_opts(1)).await.unwrap().remove(0);
    match client.ack_with_result(&d.ctx, b"lost".to_vec()).await {
        Err(Error::WrongState { .. }) => {}
        other => panic!("a result where none are kept: want WrongState, got {:?}", other),
    }
    client.ack(&d.ctx).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_progress_is_kept_while_reserved() {
    let client = common::shared().client().await;
    let res = client.enqueue(EnqueueRequest::new("rs-progress", "export").unwrap()).await.unwrap();
    let d = client.reserve("rs-progress", reserve_opts(1)).await.unwrap().remove(0);
    assert_eq!(d.job.progress, None);
    client.report_progress(&d.ctx, 40, "exported 4000 of 10000 rows", Duration::from_secs(120)).await.unwrap();
    let want = Some(Progress { percent: 40, message: "exported 4000 of 10000 rows".to_string() });
    assert_eq!(client.get_job(res.job_id).await.unwrap().progress, want);
    client.extend_lease(&d.ctx, Duration::from_secs(60)).await.unwrap(); // a plain extension keeps it
    assert_eq!(client.get_job(res.job_id).await.unwrap().progress, want);
    for (pct, msg, field) in [(101, String::new(), "progress.percent"), (1, "x".repeat(257), "progress.message")] {
        match client.report_progress(&d.ctx, pct, &msg, Duration::ZERO).await {
            Err(Error::InvalidArgument { field: f, .. }) if f == field => {}
            other => panic!("out of bounds: want InvalidArgument naming {}, got {:?}", field, other),
        }
    }
    client.nack(&d.ctx, RetryDirective::Default, "again").await.unwrap();
    assert_eq!(client.get_job(res.job_id).await.unwrap().progress, None, "the retry starts without");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nack_directives_dead_letters_drain_and_replay() {
    let client = common::shared().client().await;
    let q = "rs-nack";
    assert!(client.server_info().await.unwrap().dead_letter_retention_enabled);
    let exhausted = client.enqueue(EnqueueRequest::new(q, "exhaust").unwrap().with_max_attempts(2).with_payload(b"x".to_vec())).await.unwrap();
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    assert_eq!(d.ctx.job_id, exhausted.job_id);
    assert_eq!((d.ctx.attempt, d.ctx.max_attempts), (1, 2));
    assert!(!client.nack(&d.ctx, RetryDirective::Default, "first").await.unwrap());
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    assert_eq!(d.ctx.attempt, 2);
    assert!(client.nack(&d.ctx, RetryDirective::Default, "second").await.unwrap(), "the last attempt's nack dead-letters");

    let rejected = client.enqueue(EnqueueRequest::new(q, "reject").unwrap()).await.unwrap();
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    assert_eq!(d.ctx.job_id, rejected.job_id);
    assert!(client.nack(&d.ctx, RetryDirective::DeadLetter, "bad").await.unwrap());

    let later = client.enqueue(EnqueueRequest::new(q, "later").unwrap()).await.unwrap();
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    assert!(!client.nack(&d.ctx, RetryDirective::After(Duration::from_secs(3600)), "not yet").await.unwrap());
    let job = client.get_job(later.job_id).await.unwrap();
    assert_eq!(job.state, JobState::Scheduled);
    assert_eq!(job.last_reason.as_deref(), Some("not yet"));

    let records = client.drain_dead_letters(Some(q), 100).await.unwrap();
    let got: Vec<(u64, DeadLetterCause, u32, Option<&str>)> = records.iter().map(|r| (r.job_id, r.cause, r.final_attempt, r.last_reason.as_deref())).collect();
    assert_eq!(
        got,
        vec![
            (exhausted.job_id, DeadLetterCause::AttemptsExhausted, 2, Some("second")),
            (rejected.job_id, DeadLetterCause::Rejected, 1, Some("bad")),
        ]
    );
    assert!(client.drain_dead_letters(Some(q), 100).await.unwrap().is_empty(), "a drain removes what it returns");
    let replay = client.enqueue(records[0].to_enqueue_request()).await.unwrap();
    assert_ne!(replay.job_id, exhausted.job_id);
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    assert_eq!((d.ctx.job_id, d.ctx.attempt, d.ctx.max_attempts), (replay.job_id, 1, 2));
    assert_eq!(d.job.payload, b"x");
    client.ack(&d.ctx).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_the_leader_from_a_follower() {
    let cluster = common::shared();
    let leader = cluster.client().await.server_info().await.unwrap().leader_addr;
    let follower = cluster.addrs().into_iter().find(|a| !a.ends_with(&leader)).unwrap();
    let client = SeppClient::connect(&follower).await.unwrap();
    assert_eq!(client.leader_addr().as_deref(), Some(format!("http://{}", leader).as_str()));
    let r = client.enqueue(EnqueueRequest::new("rs-follow", "t").unwrap()).await.unwrap();
    assert_eq!(r.state, JobState::Ready);
    assert!(client.addrs().len() >= 2, "the leader joined the known nodes: {:?}", client.addrs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_answers_per_handler_error() {
    let client = common::shared().client().await;
    let q = "rs-worker";
    let ok = client.enqueue(EnqueueRequest::new(q, "ok").unwrap()).await.unwrap();
    let flaky = client.enqueue(EnqueueRequest::new(q, "flaky").unwrap()).await.unwrap();
    let later = client.enqueue(EnqueueRequest::new(q, "later").unwrap()).await.unwrap();
    let doomed = client.enqueue(EnqueueRequest::new(q, "doomed").unwrap()).await.unwrap();
    let stray = client.enqueue(EnqueueRequest::new(q, "stray").unwrap().with_max_attempts(1)).await.unwrap();
    let attempts: Arc<Mutex<Vec<(String, u32)>>> = Arc::default();
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions {
            concurrency: 4,
            lease: Duration::from_secs(30),
            wait: Duration::from_millis(200),
            ..WorkerOptions::default()
        },
    );
    let seen = attempts.clone();
    worker.handle(q, "", move |d| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push((d.job.job_type.clone(), d.ctx.attempt));
            match (d.job.job_type.as_str(), d.ctx.attempt) {
                ("ok", _) | ("flaky", 2) => Ok(()),
                ("flaky", _) => Err(HandlerError::retry("flaky the first time")),
                ("later", _) => Err(HandlerError::retry_after(Duration::from_secs(3600), "rate limited")),
                _ => Err(HandlerError::permanent("bad address")),
            }
        }
    });
    worker.handle(q, "stray", |_d| async { Err::<(), _>(std::io::Error::new(std::io::ErrorKind::Other, "disk on fire").into()) });
    let running = worker.start().unwrap();
    common::wait_for("the worker to answer every job", Duration::from_secs(30), || {
        let attempts = attempts.clone();
        async move { attempts.lock().unwrap().len() >= 4 }
    })
    .await;
    let (ok, flaky, later, doomed, stray) = (ok.job_id, flaky.job_id, later.job_id, doomed.job_id, stray.job_id);
    let c = client.clone();
    common::wait_for("flaky's retry, later's delay, the dead letters", Duration::from_secs(30), || {
        let c = c.clone();
        async move {
            matches!(c.get_job(ok).await, Err(Error::NotFound { .. }))
                && matches!(c.get_job(flaky).await, Err(Error::NotFound { .. }))
                && matches!(c.get_job(later).await, Ok(j) if j.state == JobState::Scheduled)
                && is_dead(c.get_job(doomed).await)
                && is_dead(c.get_job(stray).await)
        }
    })
    .await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    let mut seen = attempts.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, vec![("doomed".to_string(), 1), ("flaky".to_string(), 1), ("flaky".to_string(), 2), ("later".to_string(), 1), ("ok".to_string(), 1)]);
    let records = client.drain_dead_letters(Some(q), 10).await.unwrap();
    let mut got: Vec<(u64, DeadLetterCause, Option<String>)> = records.into_iter().map(|r| (r.job_id, r.cause, r.last_reason)).collect();
    got.sort_by_key(|r| r.0);
    assert_eq!(
        got,
        vec![
            (doomed, DeadLetterCause::Rejected, Some("bad address".to_string())),
            // `?` on any error is a plain retry: on its only attempt, exhausted.
            (stray, DeadLetterCause::AttemptsExhausted, Some("disk on fire".to_string())),
        ]
    );
}

/// Waits for a job's outcome, bounded.
async fn wait_job(client: &SeppClient, job_id: u64) -> sepp_rs::JobOutcome {
    tokio::time::timeout(Duration::from_secs(20), client.wait_job(job_id)).await.expect("the job finished in time").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_handler_ok_value_is_the_jobs_result() {
    let client = common::shared().client().await;
    let q = "rs-worker-result";
    let settings = QueueSettings { completed_retention: Some(Duration::from_secs(300)), ..QueueSettings::default() };
    client.create_queue(q, &settings, false).await.unwrap();
    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    let seen = errors.clone();
    let wrapped = Arc::new(AtomicUsize::new(0));
    let counted = wrapped.clone();
    // Through an instrument hook too (a tracing one's shape): the result
    // still reaches the ack.
    let instrument: InstrumentHook = Arc::new(move |_d, run| {
        counted.fetch_add(1, Ordering::SeqCst);
        run
    });
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions {
            wait: Duration::from_millis(200),
            on_error: Some(Arc::new(move |e: &Error| seen.lock().unwrap().push(e.clone()))),
            instrument: Some(instrument),
            ..WorkerOptions::default()
        },
    );
    worker.handle(q, "resize", |_d| async { Ok(b"{\"width\":320}".to_vec()) });
    worker.handle(q, "plain", |_d| async { Ok(()) });
    let res = client.enqueue(EnqueueRequest::new(q, "resize").unwrap()).await.unwrap();
    let plain = client.enqueue(EnqueueRequest::new(q, "plain").unwrap()).await.unwrap();
    let running = worker.start().unwrap();
    let out = wait_job(&client, res.job_id).await;
    let plain_out = wait_job(&client, plain.job_id).await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    assert_eq!((out.terminal, out.state, out.result.as_slice()), (true, JobState::Completed, &b"{\"width\":320}"[..]));
    let job = client.get_job(res.job_id).await.unwrap();
    assert_eq!((job.state, job.result.as_slice(), job.attempt), (JobState::Completed, &b"{\"width\":320}"[..], 1));
    assert_eq!((plain_out.state, plain_out.result.len()), (JobState::Completed, 0));
    assert_eq!(wrapped.load(Ordering::SeqCst), 2);
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_refused_result_is_reported_typed_and_the_job_not_lost() {
    let client = common::shared().client().await;
    // A queue that keeps no completed jobs: WrongState, then a plain ack.
    let q = "rs-worker-not-kept";
    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    let runs: Arc<Mutex<Vec<u32>>> = Arc::default();
    let (seen, ran) = (errors.clone(), runs.clone());
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions {
            wait: Duration::from_millis(200),
            on_error: Some(Arc::new(move |e: &Error| seen.lock().unwrap().push(e.clone()))),
            ..WorkerOptions::default()
        },
    );
    worker.handle(q, "", move |d| {
        ran.lock().unwrap().push(d.ctx.attempt);
        async { Ok(b"nowhere to keep it".to_vec()) }
    });
    let res = client.enqueue(EnqueueRequest::new(q, "resize").unwrap()).await.unwrap();
    let running = worker.start().unwrap();
    let c = client.clone();
    common::wait_for("the ack without the result", Duration::from_secs(20), || {
        let c = c.clone();
        async move { matches!(c.get_job(res.job_id).await, Err(Error::NotFound { .. })) }
    })
    .await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    assert_eq!(*runs.lock().unwrap(), vec![1]);
    let errs = errors.lock().unwrap().clone();
    assert!(matches!(errs.as_slice(), [Error::WrongState { .. }]), "{:?}", errs);

    // Over max_result_bytes (the test cluster's default, 64 KiB):
    // InvalidArgument naming the field result; the job is not acked and
    // comes back once its lease expires.
    let q = "rs-worker-oversized";
    let settings = QueueSettings { completed_retention: Some(Duration::from_secs(300)), ..QueueSettings::default() };
    client.create_queue(q, &settings, false).await.unwrap();
    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    let runs: Arc<Mutex<Vec<u32>>> = Arc::default();
    let (seen, ran) = (errors.clone(), runs.clone());
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions {
            lease: Duration::from_secs(1),
            wait: Duration::from_millis(200),
            on_error: Some(Arc::new(move |e: &Error| seen.lock().unwrap().push(e.clone()))),
            ..WorkerOptions::default()
        },
    );
    worker.handle(q, "", move |d| {
        ran.lock().unwrap().push(d.ctx.attempt);
        let result = if d.ctx.attempt == 1 { vec![b'x'; 64 * 1024 + 1] } else { b"small".to_vec() };
        async move { Ok(result) }
    });
    let res = client.enqueue(EnqueueRequest::new(q, "resize").unwrap().with_max_attempts(3)).await.unwrap();
    let running = worker.start().unwrap();
    let out = wait_job(&client, res.job_id).await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    assert_eq!((out.state, out.result.as_slice()), (JobState::Completed, &b"small"[..]));
    assert_eq!(*runs.lock().unwrap(), vec![1, 2]);
    let errs = errors.lock().unwrap().clone();
    let refused: Vec<&Error> = errs.iter().filter(|e| matches!(e, Error::InvalidArgument { .. })).collect();
    assert!(matches!(refused.as_slice(), [Error::InvalidArgument { field, .. }] if field == "result"), "{:?}", errs);
    assert_eq!(client.get_job(res.job_id).await.unwrap().attempt, 2);
}

/// A dead-lettered job: kept as Dead while retention holds it.
fn is_dead(r: Result<sepp_rs::Job, Error>) -> bool {
    matches!(r, Ok(ref j) if j.state == JobState::Dead) || matches!(r, Err(Error::NotFound { .. }))
}

/// The path and body of each request a fake server received.
type Requests = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A fake API port: answers GetServerInfo, and each other call with what
/// `answer` returns for the n-th such request (None: read it, then close the
/// connection without a word). Records the request bodies.
async fn fake_server(answer: fn(usize, &[u8]) -> Option<Vec<u8>>) -> (String, Requests) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let seen: Requests = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut conn, _) = listener.accept().await.unwrap();
            let log = log.clone();
            let calls = calls.clone();
            tokio::spawn(async move {
                loop {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body = buf[head_end..head_end + len].to_vec();
                    let reply = if path.ends_with("/GetServerInfo") {
                        Some(pb::GetServerInfoResponse::default().encode_to_vec())
                    } else {
                        log.lock().unwrap().push((path, body.clone()));
                        answer(calls.fetch_add(1, Ordering::SeqCst), &body)
                    };
                    match reply {
                        Some(bytes) => {
                            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/proto\r\ncontent-length: {}\r\n\r\n", bytes.len());
                            conn.write_all(head.as_bytes()).await.unwrap();
                            conn.write_all(&bytes).await.unwrap();
                        }
                        None => return,
                    }
                }
            });
        }
    });
    (addr, seen)
}

fn quick_retries() -> ClientOptions {
    ClientOptions {
        retry_timeout: Duration::from_secs(5),
        attempt_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn a_lost_enqueue_is_retried_with_its_one_idempotency_key() {
    let (addr, seen) = fake_server(|n, _| {
        if n == 0 {
            None
        } else {
            Some(
                pb::EnqueueResponse {
                    job_id: 7,
                    state: pb::JobState::Ready as i32,
                    duplicate: true,
                }
                .encode_to_vec(),
            )
        }
    })
    .await;
    let client = SeppClient::connect_with(&[addr.as_str()], quick_retries()).await.unwrap();
    let r = client.enqueue(EnqueueRequest::new("q", "t").unwrap()).await.unwrap();
    assert_eq!(r.job_id, 7);
    assert!(!r.duplicate, "the server's duplicate is this call's own first attempt");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "one lost attempt, one retry");
    let keys: Vec<String> = seen.iter().map(|(_, b)| pb::EnqueueRequest::decode(b.as_slice()).unwrap().idempotency_key).collect();
    assert_eq!(keys[0], keys[1]);
    assert_eq!(keys[0], r.idempotency_key);
}

#[tokio::test]
async fn a_lost_drain_is_not_retried() {
    let (addr, seen) = fake_server(|_, _| None).await;
    let client = SeppClient::connect_with(&[addr.as_str()], quick_retries()).await.unwrap();
    match client.drain_dead_letters(Some("emails"), 100).await {
        Err(Error::UnknownOutcome { op, cause, .. }) => {
            assert_eq!(op, "drain dead letters");
            assert!(matches!(*cause, Error::Unavailable { .. }), "{:?}", cause);
        }
        other => panic!("want UnknownOutcome, got {:?}", other),
    }
    assert_eq!(seen.lock().unwrap().len(), 1, "exactly one attempt");
}

#[tokio::test]
async fn a_lost_reserve_is_retried_with_its_one_request_id() {
    let (addr, seen) = fake_server(|n, _| if n == 0 { None } else { Some(pb::ReserveResponse::default().encode_to_vec()) }).await;
    let client = SeppClient::connect_with(&[addr.as_str()], quick_retries()).await.unwrap();
    assert!(client.reserve("q", ReserveOptions::default()).await.unwrap().is_empty());
    let seen = seen.lock().unwrap();
    let ids: Vec<String> = seen.iter().map(|(_, b)| pb::ReserveRequest::decode(b.as_slice()).unwrap().request_id).collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1]);
}

#[tokio::test]
async fn nothing_listening_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let opts = ClientOptions {
        retry_timeout: Duration::from_millis(300),
        ..ClientOptions::default()
    };
    let addr = format!("127.0.0.1:{}", port);
    match SeppClient::connect_with(&[addr.as_str()], opts).await {
        Err(Error::Unavailable { .. }) => {}
        other => panic!("want Unavailable, got {:?}", other),
    }
    match SeppClient::connect("https://localhost:50051").await {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "addrs"),
        other => panic!("want InvalidArgument, got {:?}", other),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_context_round_trips_through_the_server_to_the_worker() {
    let cluster = common::shared();
    let addrs = cluster.addrs();
    let refs: Vec<&str> = addrs.iter().map(String::as_str).collect();
    let injected = TraceContext {
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
        tracestate: "congo=t61rcWkgMzE".into(),
    };
    let own = TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    let calls = Arc::new(AtomicUsize::new(0));
    let (inj, counter) = (injected.clone(), calls.clone());
    // docs:begin rust-injector
    // With opentelemetry: inject the current context into a HashMap with
    // the global propagator and return its "traceparent" and "tracestate".
    let opts = ClientOptions {
        retry_timeout: Duration::from_secs(60),
        trace_injector: Some(TraceInjector(Arc::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Some(inj.clone())
        }))),
        ..ClientOptions::default()
    };
    // docs:end rust-injector
    let client = SeppClient::connect_with(&refs, opts).await.unwrap();
    let q = "rs-trace";
    let a = client.enqueue(EnqueueRequest::new(q, "t").unwrap()).await.unwrap();
    let b = client.enqueue(EnqueueRequest::new(q, "t").unwrap().with_trace_context(own.clone())).await.unwrap();
    let batch = client.enqueue_batch(vec![EnqueueRequest::new(q, "t").unwrap()]).await.unwrap();
    let c = batch[0].as_ref().unwrap().job_id;
    assert_eq!(calls.load(Ordering::SeqCst), 2, "b carried its own");
    assert_eq!(client.get_job(a.job_id).await.unwrap().trace_context, Some(injected.clone()));

    type Seen = Vec<(u64, Option<TraceContext>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let record = seen.clone();
    // docs:begin rust-instrument
    // With tracing + tracing-opentelemetry: build a span whose parent is
    // d.job.trace_context and return Box::pin(run.instrument(span)).
    let instrument: InstrumentHook = Arc::new(move |d: &sepp_rs::Delivery, run: HandlerFuture| {
        record.lock().unwrap().push((d.ctx.job_id, d.job.trace_context.clone()));
        run
    });
    // docs:end rust-instrument
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions { wait: Duration::from_millis(200), instrument: Some(instrument), ..WorkerOptions::default() },
    );
    let handled = Arc::new(AtomicUsize::new(0));
    let h = handled.clone();
    worker.handle(q, "", move |_d| {
        let h = h.clone();
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    });
    let running = worker.start().unwrap();
    common::wait_for("three jobs handled", Duration::from_secs(30), || {
        let handled = handled.clone();
        async move { handled.load(Ordering::SeqCst) >= 3 }
    })
    .await;
    assert!(running.stop(Duration::from_secs(10)).await);
    let mut got = seen.lock().unwrap().clone();
    got.sort_by_key(|(id, _)| *id);
    let mut want = vec![(a.job_id, Some(injected.clone())), (b.job_id, Some(own)), (c, Some(injected))];
    want.sort_by_key(|(id, _)| *id);
    assert_eq!(got, want);

    let bad = client.enqueue(EnqueueRequest::new(q, "t").unwrap().with_trace_context(TraceContext::new("bogus"))).await;
    match bad {
        Err(e @ Error::InvalidArgument { .. }) => assert!(e.to_string().contains("trace_context.traceparent"), "{e}"),
        other => panic!("bad trace context: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_handler_reports_progress_through_its_delivery() {
    // d.progress.report rides on the worker's lease extension: get_job shows
    // it while the handler runs, and the ack clears it. Bad input is
    // InvalidArgument at the call, and nothing is sent.
    let client = common::shared().client().await;
    let q = "rs-worker-progress";
    let settings = QueueSettings { completed_retention: Some(Duration::from_secs(300)), ..QueueSettings::default() };
    client.create_queue(q, &settings, false).await.unwrap();
    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    let seen = errors.clone();
    let bad: Arc<Mutex<Vec<String>>> = Arc::default();
    let bad_seen = bad.clone();
    let (running_tx, running_rx) = tokio::sync::oneshot::channel::<()>();
    let running_tx = Arc::new(Mutex::new(Some(running_tx)));
    let (finish_tx, finish_rx) = tokio::sync::watch::channel(false);
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions {
            wait: Duration::from_millis(200),
            progress_interval: Duration::from_millis(100),
            on_error: Some(Arc::new(move |e: &Error| seen.lock().unwrap().push(e.clone()))),
            ..WorkerOptions::default()
        },
    );
    worker.handle(q, "export", move |d| {
        let bad = bad_seen.clone();
        let running = running_tx.lock().unwrap().take();
        let mut finish = finish_rx.clone();
        async move {
            for (pct, msg) in [(101, String::new()), (50, "é".repeat(129))] {
                match d.progress.report(pct, &msg) {
                    Err(Error::InvalidArgument { field, .. }) => bad.lock().unwrap().push(field),
                    other => panic!("out of bounds: want InvalidArgument, got {:?}", other),
                }
            }
            // A clone reports for the same delivery, from another task too.
            let reporter = d.progress.clone();
            tokio::spawn(async move { reporter.report(10, "starting") }).await.unwrap().unwrap();
            d.progress.report(40, "exported 4000 of 10000 rows").unwrap(); // only the latest is sent
            if let Some(tx) = running {
                let _ = tx.send(());
            }
            while !*finish.borrow() {
                finish.changed().await.unwrap();
            }
            Ok(())
        }
    });
    let res = client.enqueue(EnqueueRequest::new(q, "export").unwrap()).await.unwrap();
    let running = worker.start().unwrap();
    tokio::time::timeout(Duration::from_secs(20), running_rx).await.expect("the handler ran in time").unwrap();
    let want = Some(Progress { percent: 40, message: "exported 4000 of 10000 rows".to_string() });
    let c = client.clone();
    let w = want.clone();
    common::wait_for("the progress", Duration::from_secs(20), move || {
        let c = c.clone();
        let w = w.clone();
        async move { c.get_job(res.job_id).await.map(|j| j.progress == w).unwrap_or(false) }
    })
    .await;
    let job = client.get_job(res.job_id).await.unwrap();
    assert_eq!((job.state, job.progress), (JobState::Reserved, want));
    finish_tx.send(true).unwrap();
    let out = wait_job(&client, res.job_id).await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    assert_eq!(out.state, JobState::Completed);
    assert_eq!(client.get_job(res.job_id).await.unwrap().progress, None, "cleared when the delivery ends");
    assert_eq!(*bad.lock().unwrap(), vec!["progress.percent".to_string(), "progress.message".to_string()]);
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_a_delivery_outside_a_worker_is_refused() {
    let client = common::shared().client().await;
    client.enqueue(EnqueueRequest::new("rs-progress-bare", "t").unwrap()).await.unwrap();
    let d = client.reserve("rs-progress-bare", reserve_opts(1)).await.unwrap().remove(0);
    assert!(matches!(d.progress.report(10, ""), Err(Error::WrongState { .. })));
    assert!(matches!(d.progress.report(101, ""), Err(Error::InvalidArgument { .. })));
    assert_eq!(client.get_job(d.job.id).await.unwrap().progress, None);
    client.ack(&d.ctx).await.unwrap();
}

/// What the fake queue server of the progress refusal test saw.
#[derive(Default)]
struct ExtendLog {
    /// Percents of the extensions carrying progress (each refused).
    refused: Vec<u32>,
    /// Extensions without progress (each granted).
    plain: usize,
    acked: bool,
}

/// A fake API port for one delivery: Reserve hands out job 7 once (then
/// nothing, after a pause), an ExtendLease with progress is refused as a
/// cluster not yet upgraded refuses it (FAILED_PRECONDITION, VERSION), one
/// without it is granted, Ack succeeds.
async fn refusing_progress_server() -> (String, Arc<Mutex<ExtendLog>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let log: Arc<Mutex<ExtendLog>> = Arc::default();
    let reserved = Arc::new(AtomicUsize::new(0));
    let seen = log.clone();
    tokio::spawn(async move {
        loop {
            let (mut conn, _) = listener.accept().await.unwrap();
            let log = seen.clone();
            let reserved = reserved.clone();
            tokio::spawn(async move {
                loop {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body = &buf[head_end..head_end + len];
                    let lease_deadline = Some(prost_types::Timestamp::from(SystemTime::now() + Duration::from_secs(30)));
                    let (status, kind, reply) = if path.ends_with("/Reserve") {
                        let jobs = if reserved.fetch_add(1, Ordering::SeqCst) == 0 {
                            vec![pb::ReservedJob {
                                ctx: Some(pb::JobContext { job_id: 7, lease_token: 1, attempt: 1, max_attempts: 3, lease_deadline, queue: "q".into(), worker_id: "w".into() }),
                                job: Some(pb::Job { id: 7, queue: "q".into(), job_type: "export".into(), attempt: 1, max_attempts: 3, ..pb::Job::default() }),
                            }]
                        } else {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            Vec::new()
                        };
                        ("200 OK", "application/proto", pb::ReserveResponse { jobs }.encode_to_vec())
                    } else if path.ends_with("/ExtendLease") {
                        let req = pb::ExtendLeaseRequest::decode(body).unwrap();
                        match req.progress {
                            Some(p) => {
                                log.lock().unwrap().refused.push(p.percent);
                                // google.rpc.PreconditionFailure { violations: [{ type: "VERSION" }] }
                                let err = r#"{"code":"failed_precondition","message":"VERSION feature=progress: not every member applies it yet","details":[{"type":"google.rpc.PreconditionFailure","value":"CgkKB1ZFUlNJT04"}]}"#;
                                ("400 Bad Request", "application/json", err.as_bytes().to_vec())
                            }
                            None => {
                                log.lock().unwrap().plain += 1;
                                ("200 OK", "application/proto", pb::ExtendLeaseResponse { lease_deadline }.encode_to_vec())
                            }
                        }
                    } else if path.ends_with("/Ack") {
                        log.lock().unwrap().acked = true;
                        ("200 OK", "application/proto", pb::AckResponse::default().encode_to_vec())
                    } else {
                        ("200 OK", "application/proto", pb::GetServerInfoResponse::default().encode_to_vec())
                    };
                    let head = format!("HTTP/1.1 {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n", status, kind, reply.len());
                    if conn.write_all(head.as_bytes()).await.is_err() || conn.write_all(&reply).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_drops_a_refused_progress_report_and_extends_without_it() {
    // While some member does not keep progress yet the server refuses it
    // and extends nothing: the worker drops the report, extends the lease
    // without it, and reports the refusal once per delivery.
    let (addr, log) = refusing_progress_server().await;
    let client = SeppClient::connect_with(&[addr.as_str()], quick_retries()).await.unwrap();
    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    let seen = errors.clone();
    let mut worker = Worker::new(
        client,
        WorkerOptions {
            wait: Duration::from_millis(100),
            progress_interval: Duration::from_millis(50),
            on_error: Some(Arc::new(move |e: &Error| seen.lock().unwrap().push(e.clone()))),
            ..WorkerOptions::default()
        },
    );
    let handler_log = log.clone();
    worker.handle("q", "export", move |d| {
        let log = handler_log.clone();
        async move {
            for (n, pct) in [10u32, 20].into_iter().enumerate() {
                d.progress.report(pct, "rows")?;
                let log = log.clone();
                common::wait_for("the refusal and the plain extension", Duration::from_secs(20), move || {
                    let l = log.lock().map(|l| l.refused.len() > n && l.plain > n).unwrap_or(false);
                    async move { l }
                })
                .await;
            }
            Ok(())
        }
    });
    let running = worker.start().unwrap();
    let done = log.clone();
    common::wait_for("the ack", Duration::from_secs(20), move || {
        let acked = done.lock().map(|l| l.acked).unwrap_or(false);
        async move { acked }
    })
    .await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    let l = log.lock().unwrap();
    assert_eq!(l.refused, vec![10, 20]);
    assert!(l.plain >= 2, "extended without the refused reports: {}", l.plain);
    let errors = errors.lock().unwrap();
    assert_eq!(errors.len(), 1, "{:?}", *errors);
    assert!(matches!(errors[0], Error::WrongState { .. }), "{:?}", errors[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ack_with_follow_ups_is_atomic_and_fenced() {
    let client = common::shared().client().await;
    let (q, next) = ("rs-fu-work", "rs-fu-next");
    let held = client.enqueue(EnqueueRequest::new(next, "t").unwrap().with_idempotency_key("held")).await.unwrap();
    let first = client.enqueue(EnqueueRequest::new(q, "charge").unwrap()).await.unwrap();
    let d = client.reserve(q, reserve_opts(1)).await.unwrap().remove(0);
    // A bad follow-up refuses the ack, naming it; the job stays reserved.
    let bad = vec![EnqueueRequest::new(next, "t").unwrap(), EnqueueRequest::new(next, "t").unwrap().with_ttl(Duration::from_micros(10))];
    match client.ack_with_follow_ups(&d.ctx, bad, Vec::new()).await {
        Err(Error::InvalidArgument { field, .. }) if field.starts_with("follow_ups[1]") => {}
        other => panic!("a bad follow-up: want InvalidArgument naming follow_ups[1], got {:?}", other),
    }
    assert_eq!(client.get_job(first.job_id).await.unwrap().state, JobState::Reserved);

    let res = client
        .ack_with_follow_ups(&d.ctx, vec![EnqueueRequest::new(next, "ship").unwrap().with_payload(b"p".to_vec()), EnqueueRequest::new(next, "t").unwrap().with_idempotency_key("held")], Vec::new())
        .await
        .unwrap();
    assert_eq!(res.len(), 2);
    assert_eq!((res[0].state, res[0].duplicate), (JobState::Ready, false));
    assert!(!res[0].idempotency_key.is_empty());
    assert_eq!((res[1].duplicate, res[1].job_id), (true, held.job_id));
    assert_eq!(client.get_job(res[0].job_id).await.unwrap().job_type, "ship");
    assert!(matches!(client.get_job(first.job_id).await, Err(Error::NotFound { .. })));

    // A lease lost before the ack: it lapses, and nothing is enqueued.
    client.enqueue(EnqueueRequest::new(q, "t").unwrap()).await.unwrap();
    let short = ReserveOptions { lease: Some(Duration::from_secs(1)), ..reserve_opts(1) };
    let d = client.reserve(q, short).await.unwrap().remove(0);
    let (c, id) = (client.clone(), d.ctx.job_id);
    common::wait_for("the lease to lapse", Duration::from_secs(20), || {
        let c = c.clone();
        async move { matches!(c.get_job(id).await, Ok(j) if j.state != JobState::Reserved) }
    })
    .await;
    match client.ack_with_follow_ups(&d.ctx, vec![EnqueueRequest::new("rs-fu-never", "t").unwrap()], Vec::new()).await {
        Err(Error::LeaseLost { .. }) => {}
        other => panic!("ack after the lease lapsed: want LeaseLost, got {:?}", other),
    }
    assert!(matches!(client.get_queue("rs-fu-never").await, Err(Error::NotFound { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_completion_enqueues_follow_ups_with_the_ack() {
    let client = common::shared().client().await;
    // A chain of steps through one worker; a refused follow-up (a unique
    // key another job holds, with refuse) leaves the job uncompleted:
    // reported, nacked, run again (this time without it).
    let q = "rs-worker-chain";
    client
        .enqueue(EnqueueRequest::new(q, "holder").unwrap().with_unique(UniqueOptions::by_key("taken")).with_scheduled_at(SystemTime::now() + Duration::from_secs(3600)))
        .await
        .unwrap();
    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    let runs: Arc<Mutex<Vec<u32>>> = Arc::default();
    let seen_payloads: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let (seen, ran, payloads) = (errors.clone(), runs.clone(), seen_payloads.clone());
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions {
            wait: Duration::from_millis(200),
            on_error: Some(Arc::new(move |e: &Error| seen.lock().unwrap().push(e.clone()))),
            ..WorkerOptions::default()
        },
    );
    worker.handle(q, "step-1", move |d| {
        ran.lock().unwrap().push(d.ctx.attempt);
        let mut follow_ups = vec![EnqueueRequest::new(q, "step-2").unwrap().with_payload(b"from step 1".to_vec())];
        if d.ctx.attempt == 1 {
            follow_ups.push(EnqueueRequest::new(q, "t").unwrap().with_unique(UniqueOptions::by_key("taken").with_refuse(true)));
        }
        async move { Ok(Completion::follow_ups(follow_ups)) }
    });
    worker.handle(q, "step-2", move |d| {
        payloads.lock().unwrap().push(d.job.payload);
        async { Ok(()) }
    });
    client.enqueue(EnqueueRequest::new(q, "step-1").unwrap()).await.unwrap();
    let running = worker.start().unwrap();
    let p = seen_payloads.clone();
    common::wait_for("step 2 to run", Duration::from_secs(20), || {
        let p = p.clone();
        async move { !p.lock().unwrap().is_empty() }
    })
    .await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    assert_eq!(*seen_payloads.lock().unwrap(), vec![b"from step 1".to_vec()]);
    assert_eq!(*runs.lock().unwrap(), vec![1, 2]);
    let errs = errors.lock().unwrap().clone();
    assert!(matches!(errs.as_slice(), [Error::UniqueConflict { .. }] | [Error::AlreadyExists { .. }]), "{:?}", errs);
}
