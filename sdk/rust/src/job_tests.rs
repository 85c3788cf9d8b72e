//! The generated read side of a job (job.rs, from `sepp.v1.Job`): every
//! proto field filled, every native field checked. The literals list
//! every field, with no `..Default::default()`: a field added to the
//! proto, or to the generated types, does not compile here until the test
//! fills and checks it.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::job::{DeadLetterCause, Job, JobAttempt, JobOrigin, JobParent, JobState, ParentFailure, Progress, TraceContext};
use crate::pb;

const BASE: i64 = 1_767_000_000;

fn ts(s: i64) -> Option<prost_types::Timestamp> {
    Some(prost_types::Timestamp { seconds: BASE + s, nanos: 5000 })
}

fn at(s: i64) -> Option<SystemTime> {
    Some(UNIX_EPOCH + Duration::from_secs((BASE + s) as u64) + Duration::from_micros(5))
}

fn wire_job() -> pb::Job {
    pb::Job {
        id: (1 << 53) + 3,
        queue: "q".to_string(),
        job_type: "t".to_string(),
        payload: b"payload".to_vec(),
        priority: 7,
        state: pb::JobState::Reserved as i32,
        enqueued_at: ts(0),
        scheduled_at: ts(1),
        next_attempt_at: ts(2),
        attempt: 3,
        max_attempts: 5,
        custom: HashMap::from([("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())]),
        worker_id: "w-1".to_string(),
        lease_deadline: ts(3),
        last_reason: "boom".to_string(),
        history: vec![pb::JobAttempt {
            attempt: 2,
            worker_id: "w-a".to_string(),
            ended_at: ts(6),
            outcome: "nack".to_string(),
            reason: "boom".to_string(),
            started_at: ts(5),
            duration: Some(prost_types::Duration { seconds: 1, nanos: 500_000_000 }),
            lease_token: u64::MAX,
            directive: "after".to_string(),
        }],
        started_at: ts(4),
        origin: Some(pb::JobOrigin {
            queue: "src".to_string(),
            job_id: (1 << 53) + 1,
            cause: pb::DeadLetterCause::LeaseExpired as i32,
            failed_at: ts(7),
            last_reason: "late".to_string(),
            final_attempt: 3,
        }),
        expires_at: ts(60),
        trace_context: Some(pb::TraceContext { traceparent: "tp".to_string(), tracestate: "congo=t61rcWkgMzE".to_string() }),
        result: b"result".to_vec(),
        completed_at: ts(8),
        run_time: Some(prost_types::Duration { seconds: 2, nanos: 250_000_000 }),
        progress: Some(pb::Progress { percent: 42, message: "half".to_string() }),
        parents: vec![pb::JobParent {
            job_id: 7,
            state: pb::JobState::Completed as i32,
            cause: pb::DeadLetterCause::Admin as i32,
            ended: true,
            result_kept: true,
            result: b"parent".to_vec(),
            result_omitted: true,
        }],
        on_parent_failure: pb::ParentFailurePolicy::Run as i32,
        waiting_children: vec![11, u64::MAX - 1],
        waiting_children_total: 101,
    }
}

fn native_job() -> Job {
    Job {
        id: (1 << 53) + 3,
        queue: "q".to_string(),
        job_type: "t".to_string(),
        payload: b"payload".to_vec(),
        priority: 7,
        state: JobState::Reserved,
        enqueued_at: at(0),
        scheduled_at: at(1),
        next_attempt_at: at(2),
        attempt: 3,
        max_attempts: 5,
        custom: BTreeMap::from([("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())]),
        worker_id: "w-1".to_string(),
        lease_deadline: at(3),
        last_reason: Some("boom".to_string()),
        history: vec![JobAttempt {
            attempt: 2,
            worker_id: "w-a".to_string(),
            ended_at: at(6),
            outcome: "nack".to_string(),
            reason: "boom".to_string(),
            started_at: at(5),
            duration: Some(Duration::from_millis(1500)),
            lease_token: u64::MAX,
            directive: "after".to_string(),
        }],
        started_at: at(4),
        origin: Some(JobOrigin {
            queue: "src".to_string(),
            job_id: (1 << 53) + 1,
            cause: DeadLetterCause::LeaseExpired,
            failed_at: at(7),
            last_reason: "late".to_string(),
            final_attempt: 3,
        }),
        expires_at: at(60),
        trace_context: Some(TraceContext { traceparent: "tp".to_string(), tracestate: "congo=t61rcWkgMzE".to_string() }),
        result: b"result".to_vec(),
        completed_at: at(8),
        run_time: Some(Duration::from_millis(2250)),
        progress: Some(Progress { percent: 42, message: "half".to_string() }),
        parents: vec![JobParent {
            job_id: 7,
            state: JobState::Completed,
            cause: DeadLetterCause::Admin,
            ended: true,
            result_kept: true,
            result: b"parent".to_vec(),
            result_omitted: true,
        }],
        on_parent_failure: Some(ParentFailure::Run),
        waiting_children: vec![11, u64::MAX - 1],
        waiting_children_total: 101,
    }
}

#[test]
fn every_field_of_a_job_is_read() {
    assert_eq!(Job::from_wire(wire_job()), native_job());
}

#[test]
fn an_empty_job_has_its_zero_values() {
    let j = Job::from_wire(pb::Job::default());
    assert_eq!(j, Job::default());
    assert_eq!((j.state, j.last_reason, j.on_parent_failure), (JobState::Unspecified, None, None));
}

#[test]
fn on_parent_failure_is_set_exactly_with_parents() {
    let j = Job::from_wire(pb::Job { parents: vec![pb::JobParent::default()], ..Default::default() });
    assert_eq!(j.on_parent_failure, Some(ParentFailure::Cancel));
    let j = Job::from_wire(pb::Job { on_parent_failure: pb::ParentFailurePolicy::Run as i32, ..Default::default() });
    assert_eq!(j.on_parent_failure, None);
}

#[test]
fn the_enums_by_every_value() {
    let states = [
        (pb::JobState::Unspecified, JobState::Unspecified),
        (pb::JobState::Scheduled, JobState::Scheduled),
        (pb::JobState::Ready, JobState::Ready),
        (pb::JobState::Reserved, JobState::Reserved),
        (pb::JobState::Dead, JobState::Dead),
        (pb::JobState::Completed, JobState::Completed),
        (pb::JobState::Blocked, JobState::Blocked),
    ];
    for (w, n) in states {
        assert_eq!(JobState::from_wire(w as i32), n);
        assert_eq!(n.to_wire(), w);
    }
    assert_eq!(JobState::from_wire(99), JobState::Unspecified);
    let causes = [
        (pb::DeadLetterCause::Unspecified, DeadLetterCause::Unspecified),
        (pb::DeadLetterCause::AttemptsExhausted, DeadLetterCause::AttemptsExhausted),
        (pb::DeadLetterCause::Rejected, DeadLetterCause::Rejected),
        (pb::DeadLetterCause::LeaseExpired, DeadLetterCause::LeaseExpired),
        (pb::DeadLetterCause::Admin, DeadLetterCause::Admin),
        (pb::DeadLetterCause::Cancelled, DeadLetterCause::Cancelled),
        (pb::DeadLetterCause::Expired, DeadLetterCause::Expired),
    ];
    for (w, n) in causes {
        assert_eq!(DeadLetterCause::from_wire(w as i32), n);
        assert_eq!(n.to_wire(), w);
    }
    assert_eq!(DeadLetterCause::from_wire(99), DeadLetterCause::Unspecified);
    for (w, n) in [(pb::ParentFailurePolicy::Cancel, ParentFailure::Cancel), (pb::ParentFailurePolicy::Run, ParentFailure::Run)] {
        assert_eq!(ParentFailure::from_wire(w as i32), n);
        assert_eq!(n.to_wire(), w);
    }
    assert_eq!(ParentFailure::from_wire(0), ParentFailure::Cancel);
    assert_eq!(ParentFailure::from_wire(99), ParentFailure::Cancel);
}
