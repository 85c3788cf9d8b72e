//! Kills the leader's process (SIGKILL) while producers and a Worker run:
//! no job is lost, none is enqueued or handled twice.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sepp_rs::{ClientOptions, EnqueueRequest, Error, JobState, SeppClient, Worker, WorkerOptions};

const N: usize = 400;
const QUEUE: &str = "rs-failover";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_killed_while_producing_and_working_loses_and_duplicates_nothing() {
    let mut cluster = common::Cluster::start(common::RETENTION, None);
    let addrs = cluster.addrs();
    let refs: Vec<&str> = addrs.iter().map(String::as_str).collect();
    let opts = ClientOptions {
        retry_timeout: Duration::from_secs(60),
        ..ClientOptions::default()
    };
    let client = SeppClient::connect_with(&refs, opts).await.unwrap_or_else(|e| panic!("no leader: {}\n{}", e, cluster.logs()));
    let leader = client.server_info().await.unwrap().leader_addr;

    let handled: Arc<Mutex<HashMap<Vec<u8>, u32>>> = Arc::default();
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut worker = Worker::new(
        client.clone(),
        WorkerOptions {
            concurrency: 8,
            wait: Duration::from_millis(500),
            on_error: Some({
                let errors = errors.clone();
                Arc::new(move |e: &Error| errors.lock().unwrap().push(e.to_string()))
            }),
            ..WorkerOptions::default()
        },
    );
    let seen = handled.clone();
    worker.handle(QUEUE, "job", move |d| {
        let seen = seen.clone();
        async move {
            *seen.lock().unwrap().entry(d.job.payload).or_insert(0) += 1;
            Ok(())
        }
    });
    let running = worker.start().unwrap();

    // A quarter up front; the rest from eight producers that each wait for
    // one enqueue before the next, so they are still going when the
    // leader dies.
    for i in 0..N / 4 {
        client.enqueue(EnqueueRequest::new(QUEUE, "job").unwrap().with_payload(i.to_string())).await.unwrap();
    }
    let next = Arc::new(Mutex::new(N / 4));
    let producers: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            let next = next.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        if *n == N {
                            return ids;
                        }
                        *n += 1;
                        *n - 1
                    };
                    let r = client.enqueue(EnqueueRequest::new(QUEUE, "job").unwrap().with_payload(i.to_string())).await;
                    ids.push(r.map(|r| r.job_id).map_err(|e| format!("job {}: {}", i, e)));
                }
            })
        })
        .collect();

    let h = handled.clone();
    common::wait_for("the worker to be under way", Duration::from_secs(60), || {
        let h = h.clone();
        async move { h.lock().unwrap().len() >= N / 8 }
    })
    .await;
    let at_kill = handled.lock().unwrap().len();
    let i = cluster.index_of(&leader);
    cluster.kill(i);

    let mut ids = Vec::new();
    for p in producers {
        for r in p.await.unwrap() {
            ids.push(r.unwrap_or_else(|e| panic!("an enqueue failed through the failover: {}", e)));
        }
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), N - N / 4, "every enqueue its own job");

    let h = handled.clone();
    common::wait_for("every job handled", Duration::from_secs(120), || {
        let h = h.clone();
        async move { h.lock().unwrap().len() == N }
    })
    .await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    let new_leader = client.server_info().await.unwrap().leader_addr;
    assert_ne!(new_leader, leader, "a new leader");

    let handled = handled.lock().unwrap().clone();
    let twice: Vec<(String, u32)> = handled.iter().filter(|(_, n)| **n != 1).map(|(p, n)| (String::from_utf8_lossy(p).into_owned(), *n)).collect();
    assert!(twice.is_empty(), "handled more than once: {:?}", twice);
    for i in 0..N {
        assert!(handled.contains_key(i.to_string().as_bytes()), "job {} never handled", i);
    }
    for state in [JobState::Ready, JobState::Scheduled, JobState::Reserved] {
        let left = client.list_jobs(QUEUE, state).await.unwrap();
        assert!(left.is_empty(), "{:?} jobs left: {:?}", state, left);
    }
    println!(
        "leader {} killed with {} of {} jobs handled; {} worker-call errors through the failover; new leader {}",
        leader,
        at_kill,
        N,
        errors.lock().unwrap().len(),
        new_leader
    );
}
