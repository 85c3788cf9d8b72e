//! Workflows: jobs of one call that wait for each other
//! (`EnqueueRequest::with_after`), against the tests' shared three-node
//! cluster. The first test is the example the docs include (the regions
//! between `docs:begin` and `docs:end`): a fan-out/fan-in batch whose
//! callback, run by a Worker, reads its parents' outcomes and results.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sepp_rs::{
    Completion, DeadLetterCause, EnqueueRequest, Error, HandlerError, JobParent, JobState, ParentFailure, ParentResult, QueueSettings, SeppClient, Worker, WorkerOptions,
};

/// A parent without a result (as list_jobs gives it, or one that did not
/// complete).
fn parent(job_id: u64, state: JobState, cause: DeadLetterCause, ended: bool) -> JobParent {
    JobParent { job_id, state, cause, ended, result_kept: false, result: vec![], result_omitted: false }
}

fn worker(client: &SeppClient, errors: &Arc<Mutex<Vec<Error>>>) -> Worker {
    let seen = errors.clone();
    Worker::new(
        client.clone(),
        WorkerOptions {
            wait: Duration::from_millis(200),
            on_error: Some(Arc::new(move |e: &Error| seen.lock().unwrap().push(e.clone()))),
            ..WorkerOptions::default()
        },
    )
}

/// A plan, three tiles rendered after it (fan out), and a stitch after the
/// three (fan in) that runs whatever they did: one tile fails for good, and
/// the stitch sees it dead and the other two completed, with their results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_runs_after_its_batch_and_reads_each_parents_outcome_and_result() -> Result<(), Box<dyn std::error::Error>> {
    let client = common::shared().client().await;
    let q = "rs-tiles";
    // The cluster may still be electing its first leader, and create_queue
    // is not retried once it may have applied: wait for one (server_info
    // is retried until a leader answers).
    client.server_info().await?;
    // The tiles' results are read back while the queue keeps completed jobs.
    let keep = QueueSettings { completed_retention: Some(Duration::from_secs(300)), ..QueueSettings::default() };
    client.create_queue(q, &keep, false).await?;

    // docs:begin workflow
    let results = client
        .enqueue_batch(vec![
            EnqueueRequest::new(q, "plan")?,                                      // 0
            EnqueueRequest::new(q, "render")?.with_payload("1").with_after([0]), // 1
            EnqueueRequest::new(q, "render")?.with_payload("2").with_after([0]), // 2
            EnqueueRequest::new(q, "render")?.with_payload("3").with_after([0]), // 3
            EnqueueRequest::new(q, "stitch")?
                .with_after([1, 2, 3])
                .with_on_parent_failure(ParentFailure::Run), // 4: runs whatever 1, 2 and 3 did
        ])
        .await?; // Err: nothing was enqueued
    // Applied whole: every item succeeded.
    let jobs = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    // jobs[0].state is JobState::Ready; the others are JobState::Blocked.
    // docs:end workflow
    let states: Vec<JobState> = jobs.iter().map(|j| j.state).collect();
    assert_eq!(states, [JobState::Ready, JobState::Blocked, JobState::Blocked, JobState::Blocked, JobState::Blocked]);
    let ids: Vec<u64> = jobs.iter().map(|j| j.job_id).collect();

    // Before the plan runs: the rest wait, and the stitch knows its parents.
    let stitch = client.get_job(ids[4]).await?;
    assert_eq!((stitch.state, stitch.on_parent_failure), (JobState::Blocked, Some(ParentFailure::Run)));
    let waiting = |id| parent(id, JobState::Blocked, DeadLetterCause::Unspecified, false);
    assert_eq!(stitch.parents, vec![waiting(ids[1]), waiting(ids[2]), waiting(ids[3])]);
    let render = client.get_job(ids[1]).await?;
    assert_eq!((render.parents.len(), render.on_parent_failure), (1, Some(ParentFailure::Cancel)));
    let stats = client.get_queue(q).await?.stats;
    assert_eq!((stats.ready, stats.blocked), (1, 4));
    assert_eq!(client.get_job(ids[0]).await?.on_parent_failure, None, "the plan has no parents");
    // And the other way: get_job shows the jobs still waiting for a job; a
    // listing leaves them out.
    let plan = client.get_job(ids[0]).await?;
    assert_eq!((plan.waiting_children, plan.waiting_children_total), (ids[1..4].to_vec(), 3));
    assert_eq!((render.waiting_children, render.waiting_children_total), (vec![ids[4]], 1));
    assert_eq!((stitch.waiting_children, stitch.waiting_children_total), (vec![], 0));
    let listed = client.list_jobs(q, JobState::Blocked).await?;
    let listed: Vec<(u64, usize, u32)> = listed.iter().map(|j| (j.id, j.waiting_children.len(), j.waiting_children_total)).collect();
    assert_eq!(listed, ids[1..].iter().map(|&id| (id, 0, 0)).collect::<Vec<_>>());

    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    // What each run of the stitch saw: its job's parents, and their results.
    type Seen = Vec<(Vec<JobParent>, Vec<ParentResult>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let mut worker = worker(&client, &errors);
    worker.handle(q, "plan", |_d| async { Ok(()) });
    worker.handle(q, "render", |d| async move {
        if d.job.payload == b"3" {
            return Err(HandlerError::permanent("tile 3 is off the map"));
        }
        Ok(format!("tile {}", String::from_utf8_lossy(&d.job.payload)).into_bytes())
    });
    let record = seen.clone();
    // docs:begin workflow-callback
    let c = client.clone();
    worker.handle(q, "stitch", move |d| {
        let (c, record) = (c.clone(), record.clone());
        async move {
            // Each parent's outcome (d.job.parents), and a completed one's result.
            let parents = c.parent_results(&d.job.parents).await?;
            let tiles: Vec<String> = parents
                .iter()
                .map(|p| match &p.result {
                    Some(tile) => String::from_utf8_lossy(tile).into_owned(),
                    None => format!("job {}: {:?} ({:?})", p.parent.job_id, p.parent.state, p.parent.cause),
                })
                .collect();
            record.lock().unwrap().push((d.job.parents, parents)); // what the test checks
            Ok(tiles.join(", ").into_bytes()) // the stitch's own result
        }
    });
    // docs:end workflow-callback
    let running = worker.start()?;
    let out = tokio::time::timeout(Duration::from_secs(30), client.wait_job(ids[4])).await??;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");

    assert_eq!(out.state, JobState::Completed);
    assert_eq!(String::from_utf8_lossy(&out.result), format!("tile 1, tile 2, job {}: Dead (Rejected)", ids[3]));
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.len(), 1, "the stitch ran once");
    let (parents, results) = &seen[0];
    // The delivery carried the completed parents' results inline (so
    // parent_results read none of them); the dead one has none.
    let completed = |id, result: &[u8]| JobParent { result_kept: true, result: result.to_vec(), ..parent(id, JobState::Completed, DeadLetterCause::Unspecified, true) };
    let want = vec![completed(ids[1], b"tile 1"), completed(ids[2], b"tile 2"), parent(ids[3], JobState::Dead, DeadLetterCause::Rejected, true)];
    assert_eq!(*parents, want);
    let got: Vec<(&JobParent, Option<&[u8]>)> = results.iter().map(|r| (&r.parent, r.result.as_deref())).collect();
    assert_eq!(got, vec![(&want[0], Some(&b"tile 1"[..])), (&want[1], Some(&b"tile 2"[..])), (&want[2], None)]);
    // parent_results uses an inline result without a get_job: for a parent
    // the server does not hold it still has the one given; one left out
    // (or not sent, as list_jobs' parents) it reads, and finds none.
    let unheld = |kept: bool, omitted: bool| JobParent {
        result_kept: kept,
        result: if kept && !omitted { b"inline".to_vec() } else { vec![] },
        result_omitted: omitted,
        ..parent(u64::MAX - 1, JobState::Completed, DeadLetterCause::Unspecified, true)
    };
    let read = client.parent_results(&[unheld(true, false), unheld(true, true), unheld(false, false)]).await?;
    let read: Vec<Option<&[u8]>> = read.iter().map(|r| r.result.as_deref()).collect();
    assert_eq!(read, vec![Some(&b"inline"[..]), None, None]);
    // The same parents without their results (as list_jobs gives them):
    // parent_results reads the completed ones'.
    let bare: Vec<JobParent> = want.iter().map(|p| parent(p.job_id, p.state, p.cause, p.ended)).collect();
    let reread = client.parent_results(&bare).await?;
    let reread: Vec<Option<&[u8]>> = reread.iter().map(|r| r.result.as_deref()).collect();
    assert_eq!(reread, vec![Some(&b"tile 1"[..]), Some(&b"tile 2"[..]), None]);
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
    let stats = client.get_queue(q).await?.stats;
    assert_eq!((stats.blocked, stats.ready, stats.reserved), (0, 0, 0));
    // Each parent ended and released its children: none wait any more.
    for id in [ids[0], ids[1]] {
        let done = client.get_job(id).await?;
        assert_eq!((done.state, done.waiting_children, done.waiting_children_total), (JobState::Completed, vec![], 0));
    }
    Ok(())
}

/// The default policy: a dependent of a dead parent is cancelled at once,
/// and its own dependent with it; a parent whose record is gone has no
/// result to read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_parent_cancels_its_dependents() -> Result<(), Box<dyn std::error::Error>> {
    let client = common::shared().client().await;
    let q = "rs-chain";
    let res = client
        .enqueue_batch(vec![EnqueueRequest::new(q, "a")?, EnqueueRequest::new(q, "b")?.with_after([0]), EnqueueRequest::new(q, "c")?.with_after([1])])
        .await?;
    let ids = res.into_iter().map(|r| r.map(|r| r.job_id)).collect::<Result<Vec<_>, _>>()?;
    let opts = sepp_rs::ReserveOptions { max: 3, wait: Duration::from_secs(2), ..sepp_rs::ReserveOptions::default() };
    let d = client.reserve(q, opts).await?;
    assert_eq!(d.iter().map(|d| d.ctx.job_id).collect::<Vec<_>>(), vec![ids[0]], "b and c wait");
    assert!(d[0].job.parents.is_empty());
    assert!(client.nack(&d[0].ctx, sepp_rs::RetryDirective::DeadLetter, "no").await?);
    let b = client.get_dead_letter(ids[1]).await?;
    assert_eq!(b.cause, DeadLetterCause::Cancelled);
    assert_eq!(b.last_reason, Some(format!("parent job {} was dead-lettered (rejected)", ids[0])));
    let c = client.get_dead_letter(ids[2]).await?;
    assert_eq!(c.cause, DeadLetterCause::Cancelled);
    assert_eq!(c.last_reason, Some(format!("parent job {} was dead-lettered (cancelled)", ids[1])));
    // Parents that did not complete have no result, and cost no read.
    let parents = [parent(ids[0], JobState::Dead, DeadLetterCause::Rejected, true)];
    assert_eq!(client.parent_results(&parents).await?[0].result, None);
    // A completed parent the server no longer holds: no result either.
    let gone = [parent(u64::MAX - 1, JobState::Completed, DeadLetterCause::Unspecified, true)];
    assert_eq!(client.parent_results(&gone).await?[0].result, None);
    Ok(())
}

/// A batch whose jobs wait for each other goes whole or not at all: an item
/// the client refuses fails the call (a dropped item would shift the
/// indexes of the rest), as does one the server refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_dependencies_is_refused_whole() -> Result<(), Box<dyn std::error::Error>> {
    let client = common::shared().client().await;
    let q = "rs-whole";
    let bad_ttl = || EnqueueRequest::new(q, "b").map(|r| r.with_ttl(Duration::from_micros(10)));
    match client.enqueue_batch(vec![EnqueueRequest::new(q, "a")?, bad_ttl()?, EnqueueRequest::new(q, "c")?.with_after([0])]).await {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "jobs[1].ttl_ms"),
        other => panic!("want the whole batch refused naming jobs[1].ttl_ms, got {:?}", other),
    }
    match client.enqueue_batch(vec![EnqueueRequest::new(q, "a")?.with_after([1]), EnqueueRequest::new(q, "b")?]).await {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "jobs[0].after[0]"),
        other => panic!("want the whole batch refused naming jobs[0].after[0], got {:?}", other),
    }
    assert!(matches!(client.get_queue(q).await, Err(Error::NotFound { .. })), "nothing was enqueued");
    // Without dependencies the same refusal is the item's alone.
    let res = client.enqueue_batch(vec![EnqueueRequest::new(q, "a")?, bad_ttl()?]).await?;
    assert!(res[0].is_ok());
    assert!(matches!(&res[1], Err(Error::InvalidArgument { field, .. }) if field == "jobs[1].ttl_ms"), "{:?}", res[1]);
    // A lone enqueue has nothing to wait for; a policy needs parents.
    match client.enqueue(EnqueueRequest::new(q, "a")?.with_after([0])).await {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "after"),
        other => panic!("a lone enqueue with after: {:?}", other),
    }
    let lone_policy = client.enqueue_batch(vec![EnqueueRequest::new(q, "a")?.with_on_parent_failure(ParentFailure::Run)]).await?;
    match &lone_policy[0] {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "jobs[0].on_parent_failure"),
        other => panic!("a policy without parents: {:?}", other),
    }
    Ok(())
}

/// Follow-ups wait for each other too: a handler's Completion enqueues a
/// step and a step after it, which runs once the first completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_ups_wait_for_earlier_follow_ups() -> Result<(), Box<dyn std::error::Error>> {
    let client = common::shared().client().await;
    let q = "rs-follow-chain";
    let order: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
    let errors: Arc<Mutex<Vec<Error>>> = Arc::default();
    let mut worker = worker(&client, &errors);
    worker.handle(q, "start", move |_d| async move {
        let first = EnqueueRequest::new(q, "first")?;
        let second = EnqueueRequest::new(q, "second")?.with_after([0]);
        Ok::<_, HandlerError>(Completion::follow_ups(vec![first, second]))
    });
    let ran = order.clone();
    worker.handle(q, "", move |d| {
        ran.lock().unwrap().push((d.job.job_type.clone(), d.job.parents.len()));
        async { Ok(()) }
    });
    client.enqueue(EnqueueRequest::new(q, "start")?).await?;
    let running = worker.start()?;
    let o = order.clone();
    common::wait_for("both follow-ups to run", Duration::from_secs(20), || {
        let o = o.clone();
        async move { o.lock().unwrap().len() == 2 }
    })
    .await;
    assert!(running.stop(Duration::from_secs(10)).await, "a graceful stop");
    assert_eq!(*order.lock().unwrap(), vec![("first".to_string(), 0), ("second".to_string(), 1)]);
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
    Ok(())
}
