//! The generated write side of a job (enqueue.rs, from
//! `sepp.v1.EnqueueRequest`) and its hand-kept wrapper: every proto field
//! filled through the with_ setters, the whole wire message checked. The
//! wire literals list every field, with no `..Default::default()`: a field
//! added to the proto does not compile here until the test fills and
//! checks it.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::pb;
use crate::types::{EnqueueRequest, ParentFailure, Priority, TraceContext, UniqueOptions};

const BASE: i64 = 1_767_000_000;
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn ts(s: i64) -> Option<prost_types::Timestamp> {
    Some(prost_types::Timestamp { seconds: BASE + s, nanos: 5000 })
}

fn at(s: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs((BASE + s) as u64) + Duration::from_micros(5)
}

#[test]
fn every_field_reaches_the_wire() {
    let r = EnqueueRequest::new("q", "email")
        .unwrap()
        .with_payload(b"hi".to_vec())
        .with_priority(Priority::P7)
        .with_scheduled_at(at(1))
        .with_max_attempts(4)
        .with_custom("tenant", "acme")
        .with_idempotency_key("the caller's, which the client passes on as key")
        .with_unique(
            UniqueOptions::default()
                .with_key("k-1")
                .with_fields(["tenant", "region"])
                .with_cover_dead(true)
                .with_completed_for(Duration::from_micros(60_000_700))
                .with_refuse(true),
        )
        .with_expires_at(at(2))
        .with_ttl(Duration::from_micros(1_500_900))
        .with_trace_context(TraceContext { traceparent: TRACEPARENT.into(), tracestate: "vendor=x".into() })
        .with_after([0, 2])
        .with_on_parent_failure(ParentFailure::Run);
    let want = pb::EnqueueRequest {
        queue: "q".into(),
        job_type: "email".into(),
        payload: b"hi".to_vec(),
        priority: Some(7),
        scheduled_at: ts(1),
        max_attempts: 4,
        custom: HashMap::from([("tenant".to_string(), "acme".to_string())]),
        idempotency_key: "key-1".into(),
        unique: Some(pb::UniqueOptions {
            key: "k-1".into(),
            fields: vec!["tenant".into(), "region".into()],
            cover_dead: true,
            completed_for_ms: 60_000,
            refuse: true,
        }),
        expires_at: ts(2),
        ttl_ms: 1500,
        trace_context: Some(pb::TraceContext { traceparent: TRACEPARENT.into(), tracestate: "vendor=x".into() }),
        after: vec![0, 2],
        on_parent_failure: pb::ParentFailurePolicy::Run as i32,
    };
    assert_eq!(r.to_wire("key-1"), want);
    // The getters read back what the setters set.
    assert_eq!(r.idempotency_key(), Some("the caller's, which the client passes on as key"));
    assert_eq!(r.priority(), Some(Priority::P7));
    assert_eq!(r.after(), &[0, 2]);
    assert_eq!(r.unique().map(|u| u.fields.clone()), Some(vec!["tenant".to_string(), "region".to_string()]));
}

#[test]
fn unset_fields_stay_unset() {
    let r = EnqueueRequest::new("q", "t").unwrap();
    let want = pb::EnqueueRequest {
        queue: "q".into(),
        job_type: "t".into(),
        payload: Vec::new(),
        priority: None,
        scheduled_at: None,
        max_attempts: 0,
        custom: HashMap::new(),
        idempotency_key: "k".into(),
        unique: None,
        expires_at: None,
        ttl_ms: 0,
        trace_context: None,
        after: Vec::new(),
        on_parent_failure: 0,
    };
    assert_eq!(r.to_wire("k"), want);
    assert_eq!(r.idempotency_key(), None);
}
