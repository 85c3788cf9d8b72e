//! Unique jobs, expiry of unstarted jobs and periodic schedules against a
//! real local three-node cluster (one for the whole file, dead-letter
//! retention on; each test with queues and schedules of its own).

mod common;

use std::time::{Duration, Instant, SystemTime};

use sepp_rs::client::{ReserveOptions, SeppClient};
use sepp_rs::{DeadLetterCause, EnqueueRequest, Error, JobState, JobTemplate, ScheduleCatchUp, ScheduleDefinition, ScheduleOverlap, ScheduleSpec, UniqueOptions};

/// A client of the shared cluster, used right after the cluster starts: a
/// new cluster's leader holds a unique, expiring or schedule write until it
/// has asked its members which command versions they apply, rather than
/// refusing it, so no test waits for the features first.
async fn ready_client() -> SeppClient {
    common::shared().client().await
}

fn reserve_opts(wait: Duration) -> ReserveOptions {
    ReserveOptions {
        worker_id: "rs-scheduling".into(),
        max: 1,
        lease: Some(Duration::from_secs(60)),
        wait,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_job_enqueued_twice_returns_the_first_as_a_duplicate() {
    let client = ready_client().await;
    let q = "rs-unique-dup";
    let first = client
        .enqueue(EnqueueRequest::new(q, "rebuild").unwrap().with_unique(UniqueOptions::by_key("rebuild-acme")))
        .await
        .unwrap();
    assert!(!first.duplicate);
    assert_eq!(first.state, JobState::Ready);

    let second = client
        .enqueue(EnqueueRequest::new(q, "rebuild").unwrap().with_payload(b"other".to_vec()).with_unique(UniqueOptions::by_key("rebuild-acme")))
        .await
        .unwrap();
    assert!(second.duplicate, "{:?}", second);
    assert_eq!(second.job_id, first.job_id);
    assert_eq!(second.state, JobState::Ready);

    // The same key in another queue holds another job.
    let elsewhere = client
        .enqueue(EnqueueRequest::new("rs-unique-dup-2", "rebuild").unwrap().with_unique(UniqueOptions::by_key("rebuild-acme")))
        .await
        .unwrap();
    assert!(!elsewhere.duplicate);
    assert_ne!(elsewhere.job_id, first.job_id);

    // A derived key: type, payload and the named custom field.
    let derived = |tenant: &str| {
        EnqueueRequest::new(q, "report")
            .unwrap()
            .with_payload(b"{}".to_vec())
            .with_custom("tenant", tenant)
            .with_custom("trace", format!("{:?}", SystemTime::now()))
            .with_unique(UniqueOptions::by_fields(["tenant"]))
    };
    let acme = client.enqueue(derived("acme")).await.unwrap();
    let acme_again = client.enqueue(derived("acme")).await.unwrap();
    let globex = client.enqueue(derived("globex")).await.unwrap();
    assert!(!acme.duplicate && acme_again.duplicate && !globex.duplicate);
    assert_eq!(acme_again.job_id, acme.job_id);
    assert_ne!(globex.job_id, acme.job_id);

    // The batch path: each item gets its own answer.
    let batch = client
        .enqueue_batch(vec![
            EnqueueRequest::new(q, "rebuild").unwrap().with_unique(UniqueOptions::by_key("rebuild-acme")),
            EnqueueRequest::new(q, "rebuild").unwrap().with_unique(UniqueOptions::by_key("rebuild-initech")),
        ])
        .await
        .unwrap();
    let held = batch[0].as_ref().unwrap();
    assert!(held.duplicate);
    assert_eq!(held.job_id, first.job_id);
    let fresh = batch[1].as_ref().unwrap();
    assert!(!fresh.duplicate);

    // The ack frees the key (no completed_for): the next enqueue adds a job.
    let got = client.reserve(q, reserve_opts(Duration::from_secs(2))).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].ctx.job_id, first.job_id, "the oldest job first");
    client.ack(&got[0].ctx).await.unwrap();
    let after_ack = client
        .enqueue(EnqueueRequest::new(q, "rebuild").unwrap().with_unique(UniqueOptions::by_key("rebuild-acme")))
        .await
        .unwrap();
    assert!(!after_ack.duplicate);
    assert_ne!(after_ack.job_id, first.job_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_unique_conflict_names_the_holding_job() {
    let client = ready_client().await;
    let q = "rs-unique-refuse";
    let unique = UniqueOptions::by_key("nightly").with_refuse(true);
    let first = client.enqueue(EnqueueRequest::new(q, "t").unwrap().with_unique(unique.clone())).await.unwrap();
    assert!(!first.duplicate);

    let err = client.enqueue(EnqueueRequest::new(q, "t").unwrap().with_unique(unique.clone())).await.unwrap_err();
    match &err {
        Error::UniqueConflict { op, queue, job_id, .. } => {
            assert_eq!(*op, "enqueue");
            assert_eq!(queue, q);
            assert_eq!(*job_id, first.job_id);
        }
        other => panic!("want UniqueConflict, got {:?}", other),
    }
    assert_eq!(err.code(), sepp_rs::Code::AlreadyExists);
    assert!(err.to_string().contains("already_exists"), "{}", err);

    let batch = client
        .enqueue_batch(vec![EnqueueRequest::new(q, "t").unwrap(), EnqueueRequest::new(q, "t").unwrap().with_unique(unique)])
        .await
        .unwrap();
    assert!(batch[0].is_ok());
    match &batch[1] {
        Err(Error::UniqueConflict { job_id, queue, .. }) => assert_eq!((queue.as_str(), *job_id), (q, first.job_id)),
        other => panic!("want UniqueConflict, got {:?}", other),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_nobody_reserves_before_its_ttl_dies_expired() {
    let client = ready_client().await;
    let q = "rs-ttl";
    let r = client.enqueue(EnqueueRequest::new(q, "quote").unwrap().with_ttl(Duration::from_millis(300))).await.unwrap();
    // A job without a deadline beside it stays.
    let keeper = client.enqueue(EnqueueRequest::new(q, "quote").unwrap()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut record = None;
    while record.is_none() {
        assert!(Instant::now() < deadline, "the ttl job {} was not dead-lettered in time", r.job_id);
        record = client.drain_dead_letters(Some(q), 100).await.unwrap().into_iter().find(|rec| rec.job_id == r.job_id);
        if record.is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let record = record.unwrap();
    assert_eq!(record.cause, DeadLetterCause::Expired);
    assert_eq!(record.final_attempt, 0, "never delivered");
    let kept = client.get_job(keeper.job_id).await.unwrap();
    assert_eq!(kept.state, JobState::Ready);
    assert_eq!(kept.expires_at, None);

    // An absolute deadline rides on the job.
    let at = SystemTime::now() + Duration::from_secs(3600);
    let later = client.enqueue(EnqueueRequest::new(q, "quote").unwrap().with_expires_at(at)).await.unwrap();
    let job = client.get_job(later.job_id).await.unwrap();
    let off = job.expires_at.unwrap().duration_since(at).unwrap_or_else(|e| e.duration());
    assert!(off < Duration::from_millis(1), "expires_at {:?}, asked {:?}", job.expires_at, at);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_deadlines_are_refused_naming_the_field() {
    let client = ready_client().await;
    let q = "rs-ttl-bad";
    // The server's check: a deadline already passed.
    let err = client
        .enqueue(EnqueueRequest::new(q, "t").unwrap().with_expires_at(SystemTime::now() - Duration::from_secs(60)))
        .await
        .unwrap_err();
    match &err {
        Error::InvalidArgument { field, .. } => assert_eq!(field, "expires_at", "{}", err),
        other => panic!("want InvalidArgument, got {:?}", other),
    }
    // The client's: a ttl under 1 ms, before a round trip.
    let err = client.enqueue(EnqueueRequest::new(q, "t").unwrap().with_ttl(Duration::from_micros(500))).await.unwrap_err();
    match &err {
        Error::InvalidArgument { field, limit, .. } => assert_eq!((field.as_str(), limit.as_str()), ("ttl_ms", ">= 1ms")),
        other => panic!("want InvalidArgument, got {:?}", other),
    }
    // In a batch only that item is refused; the others go out.
    let batch = client
        .enqueue_batch(vec![EnqueueRequest::new(q, "t").unwrap(), EnqueueRequest::new(q, "t").unwrap().with_ttl(Duration::from_nanos(1))])
        .await
        .unwrap();
    let sent = batch[0].as_ref().unwrap();
    assert_eq!(client.get_job(sent.job_id).await.unwrap().queue, q);
    match &batch[1] {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "jobs[1].ttl_ms"),
        other => panic!("want InvalidArgument, got {:?}", other),
    }
    let listed = client.list_jobs(q, JobState::Ready).await.unwrap();
    assert_eq!(listed.len(), 1, "the refused item never reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_fires_pauses_resumes_updates_and_is_deleted() {
    let client = ready_client().await;
    let q = "rs-schedule";
    let name = "rs-heartbeat";
    let def = ScheduleDefinition::every(name, Duration::from_secs(1), JobTemplate::new(q, "ping").with_payload(b"beat".to_vec()).with_custom("tenant", "acme"));
    let created = client.create_schedule(&def).await.unwrap();
    assert_eq!(created.definition, def);
    assert!(!created.paused());
    assert!(created.created_at.is_some());

    // A name that exists is AlreadyExists.
    match client.create_schedule(&def).await.unwrap_err() {
        Error::AlreadyExists { op, .. } => assert_eq!(op, "create schedule"),
        other => panic!("want AlreadyExists, got {:?}", other),
    }

    // A tick's job reaches a reserve, carrying the template and the
    // schedule's fields.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut delivery = None;
    while delivery.is_none() {
        assert!(Instant::now() < deadline, "no job of the schedule was reserved in time");
        delivery = client.reserve(q, reserve_opts(Duration::from_secs(2))).await.unwrap().pop();
    }
    let d = delivery.unwrap();
    assert_eq!(d.job.job_type, "ping");
    assert_eq!(d.job.payload, b"beat");
    assert_eq!(d.job.custom.get("tenant").map(String::as_str), Some("acme"));
    assert_eq!(d.job.custom.get("sepp_schedule").map(String::as_str), Some(name));
    assert!(d.job.custom.contains_key("sepp_schedule_tick"));
    client.ack(&d.ctx).await.unwrap();

    let got = client.get_schedule(name, 3).await.unwrap();
    assert!(got.fired >= 1, "{:?}", got);
    assert!(got.last_fire_time.is_some());
    assert!(got.last_job_id.is_some());
    assert_eq!(got.next_fire_times.len(), 3);
    assert!(got.next_fire_times.windows(2).all(|w| w[0] < w[1]), "{:?}", got.next_fire_times);

    // Paused: no next tick.
    let paused = client.pause_schedule(name).await.unwrap();
    assert!(paused.paused());
    assert!(paused.next_fire_times.is_empty(), "{:?}", paused.next_fire_times);
    let got = client.get_schedule(name, 0).await.unwrap();
    assert!(got.paused() && got.next_fire_times.is_empty(), "{:?}", got);
    assert_eq!(got.fired, paused.fired, "a tick fired while paused");

    // An update keeps it paused and replaces the definition.
    let updated_def = ScheduleDefinition::cron(name, "*/2 * * * * *", JobTemplate::new(q, "ping2"))
        .with_time_zone("Europe/Berlin")
        .with_overlap(ScheduleOverlap::Allow)
        .with_catch_up(ScheduleCatchUp::Skip);
    let updated = client.update_schedule(&updated_def).await.unwrap();
    assert!(updated.paused());
    assert_eq!(updated.definition.spec, ScheduleSpec::Cron("*/2 * * * * *".into()));
    assert_eq!(updated.definition.template.job_type, "ping2");
    assert_eq!(updated.definition.time_zone, "Europe/Berlin");
    assert_eq!(updated.definition.overlap, ScheduleOverlap::Allow);
    assert_eq!(updated.definition.catch_up, ScheduleCatchUp::Skip);

    // Resumed: next ticks again, from after now.
    let before = SystemTime::now() - Duration::from_secs(1);
    let resumed = client.resume_schedule(name).await.unwrap();
    assert!(!resumed.paused());
    assert!(!resumed.next_fire_times.is_empty());
    assert!(resumed.next_fire_times[0] > before, "{:?}", resumed.next_fire_times);

    let listed = client.list_schedules(2).await.unwrap();
    let mine = listed.iter().find(|s| s.name() == name).unwrap_or_else(|| panic!("{} not listed: {:?}", name, listed));
    assert_eq!(mine.definition.template.job_type, "ping2");
    assert_eq!(mine.next_fire_times.len(), 2);
    let names: Vec<&str> = listed.iter().map(|s| s.name()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "listed by name");

    client.delete_schedule(name).await.unwrap();
    match client.get_schedule(name, 0).await.unwrap_err() {
        Error::NotFound { op, .. } => assert_eq!(op, "get schedule"),
        other => panic!("want NotFound, got {:?}", other),
    }
    assert!(matches!(client.delete_schedule(name).await.unwrap_err(), Error::NotFound { .. }));
    assert!(matches!(client.pause_schedule(name).await.unwrap_err(), Error::NotFound { .. }));
    assert!(matches!(client.update_schedule(&updated_def).await.unwrap_err(), Error::NotFound { .. }));
    assert!(client.list_schedules(0).await.unwrap().iter().all(|s| s.name() != name));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_schedule_is_refused_naming_the_field() {
    let client = ready_client().await;
    let t = || JobTemplate::new("rs-schedule-bad", "t");
    let cases = vec![
        (ScheduleDefinition::cron("rs-bad-cron", "not a cron", t()), "cron"),
        (ScheduleDefinition::cron("rs-bad-empty", "", t()), "cron"),
        (ScheduleDefinition::every("rs-bad-interval", Duration::from_millis(500), t()), "interval"),
        (ScheduleDefinition::cron("rs-bad-zone", "@hourly", t()).with_time_zone("Mars/Olympus_Mons"), "time_zone"),
        (ScheduleDefinition::every("rs-bad-queue", Duration::from_secs(60), JobTemplate::new("", "t")), "template.queue"),
    ];
    for (def, want) in cases {
        match client.create_schedule(&def).await {
            Err(Error::InvalidArgument { field, op, .. }) => {
                assert_eq!(field, want, "{}", def.name);
                assert_eq!(op, "create schedule");
            }
            other => panic!("{}: want InvalidArgument on {}, got {:?}", def.name, want, other),
        }
        assert!(matches!(client.get_schedule(&def.name, 0).await, Err(Error::NotFound { .. })), "{} was created", def.name);
    }
}
