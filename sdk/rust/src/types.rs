//! The values a caller builds and gets back, in Rust's idioms: ids are
//! `u64`, times `SystemTime`, durations `Duration`, payloads bytes.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use crate::error::Error;
use crate::pb;

// The read side of a job (Job, JobAttempt, JobOrigin, JobParent, Progress,
// TraceContext and the enums JobState, DeadLetterCause and ParentFailure)
// is generated from `sepp.v1.Job` by tools/protoc-gen-sepp-sdk (job.rs,
// make generate): a field added to the proto reaches it with no edit here.
pub use crate::job::{DeadLetterCause, Job, JobAttempt, JobOrigin, JobParent, JobState, ParentFailure, Progress, TraceContext};

/// A job's priority, 0 (lowest) to 9 (highest). Higher priorities are
/// handed out first; within one priority, first in first out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Priority {
    pub const P0: Priority = Priority(0);
    pub const P1: Priority = Priority(1);
    pub const P2: Priority = Priority(2);
    pub const P3: Priority = Priority(3);
    pub const P4: Priority = Priority(4);
    pub const P5: Priority = Priority(5);
    pub const P6: Priority = Priority(6);
    pub const P7: Priority = Priority(7);
    pub const P8: Priority = Priority(8);
    pub const P9: Priority = Priority(9);
    /// The lowest priority, [`Priority::P0`].
    pub const MIN: Priority = Priority::P0;
    /// The highest priority, [`Priority::P9`].
    pub const MAX: Priority = Priority::P9;

    /// The priority of level n; an error above 9.
    pub fn new(level: u32) -> Result<Priority, Error> {
        if level > 9 {
            return Err(Error::invalid("enqueue", "priority", "0..9", &format!("must be 0..9, got {}", level)));
        }
        Ok(Priority(level as u8))
    }

    /// The level, 0..=9.
    pub fn level(self) -> u32 {
        u32::from(self.0)
    }
}

// The write side (EnqueueRequest and UniqueOptions, their with_ setters,
// getters and conversions to the wire) is generated from
// `sepp.v1.EnqueueRequest` by tools/protoc-gen-sepp-sdk (enqueue.rs, make
// generate): a field added to the proto reaches it with no edit here.
// What is not a plain field stays here: new's checks, validation, and the
// idempotency key the client sends.
pub use crate::enqueue::{EnqueueRequest, UniqueOptions};

impl TraceContext {
    /// A trace context of a traceparent alone.
    pub fn new(traceparent: impl Into<String>) -> TraceContext {
        TraceContext { traceparent: traceparent.into(), tracestate: String::new() }
    }
}

impl EnqueueRequest {
    /// A job of job_type for queue; both must be non-empty. The `with_`
    /// methods set the optional fields.
    pub fn new(queue: impl Into<String>, job_type: impl Into<String>) -> Result<EnqueueRequest, Error> {
        let queue = queue.into();
        let job_type = job_type.into();
        if queue.is_empty() {
            return Err(Error::invalid("enqueue", "queue", "", "must not be empty"));
        }
        if job_type.is_empty() {
            return Err(Error::invalid("enqueue", "job_type", "", "must not be empty"));
        }
        Ok(EnqueueRequest::from_required(queue, job_type))
    }

    /// What the Go client checks before a round trip (field prefixed with
    /// `prefix.` in a batch): a ttl under 1 ms other than zero, an `after`
    /// index out of the wire's range. The rest is the server's to judge.
    pub(crate) fn validate(&self, op: &'static str, prefix: &str) -> Result<(), Error> {
        let field = |f: &str| if prefix.is_empty() { f.to_string() } else { format!("{}.{}", prefix, f) };
        if let Some(ttl) = self.ttl {
            if !ttl.is_zero() && ttl < Duration::from_millis(1) {
                return Err(Error::invalid(op, &field("ttl_ms"), ">= 1ms", &format!("ttl must be at least 1ms, got {:?}", ttl)));
            }
        }
        if let Some((k, a)) = self.after.iter().enumerate().find(|(_, a)| **a > MAX_AFTER_INDEX) {
            return Err(Error::invalid(
                op,
                &field(&format!("after[{}]", k)),
                "an earlier request's index",
                &format!("after[{}] must be an earlier request's index, got {}", k, a),
            ));
        }
        Ok(())
    }

    /// The wire form, sent with the idempotency key `key` (the caller's, or
    /// one the client generated); validate refused an `after` index above
    /// MAX_AFTER_INDEX (unvalidated, the server refuses the saturated one,
    /// naming it).
    pub(crate) fn to_wire(&self, key: &str) -> pb::EnqueueRequest {
        pb::EnqueueRequest { idempotency_key: key.to_string(), ..self.fields_to_wire() }
    }
}

/// The largest `after` index the server reads (it takes them as int32).
const MAX_AFTER_INDEX: usize = i32::MAX as usize;

/// What makes a job unique in its queue (see docs/unique-jobs.md): the key
/// is held while the job waits, is scheduled or is reserved; `cover_dead`
/// and `completed_for` hold it longer. Keys are per queue.
///
/// ```
/// use std::time::Duration;
/// use sepp_rs::UniqueOptions;
///
/// // One rebuild per tenant at a time, and none again within 10 minutes.
/// let unique = UniqueOptions::by_fields(["tenant"]).with_completed_for(Duration::from_secs(600));
/// // An explicit key; a conflict fails instead of returning the holder.
/// let strict = UniqueOptions::by_key("rebuild-acme").with_refuse(true);
/// # let _ = (unique, strict);
/// ```
impl UniqueOptions {
    /// Uniqueness by an explicit key.
    pub fn by_key(key: impl Into<String>) -> UniqueOptions {
        UniqueOptions {
            key: key.into(),
            ..UniqueOptions::default()
        }
    }

    /// Uniqueness by a key the server derives from the job type, the
    /// payload and these custom fields (none: type and payload alone).
    pub fn by_fields<I, S>(fields: I) -> UniqueOptions
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        UniqueOptions {
            fields: fields.into_iter().map(Into::into).collect(),
            ..UniqueOptions::default()
        }
    }
}

/// The server's bound on [`Progress::message`], in bytes
/// (`GetServerInfo`'s `limits.max_progress_message_bytes`).
pub const MAX_PROGRESS_MESSAGE_BYTES: usize = 256;

/// Refuses what the server would refuse of a progress report
/// ([`Error::InvalidArgument`] naming `progress.percent` or
/// `progress.message`), before a call is spent on it.
pub(crate) fn check_progress(op: &'static str, percent: u32, message: &str) -> Result<(), Error> {
    if percent > 100 {
        return Err(Error::invalid(op, "progress.percent", "0..100", &format!("must be 0..100, got {}", percent)));
    }
    if message.len() > MAX_PROGRESS_MESSAGE_BYTES {
        return Err(Error::invalid(op, "progress.message", "256", &format!("is {} bytes, above the limit of {}", message.len(), MAX_PROGRESS_MESSAGE_BYTES)));
    }
    Ok(())
}

/// What a handler's reports leave for the worker's lease keeper.
#[derive(Default)]
pub(crate) struct ProgressState {
    /// The latest report not yet sent.
    pub(crate) pending: Option<Progress>,
    /// A refusal was reported (once per delivery).
    pub(crate) refused: bool,
}

/// Carries a handler's reports ([`ProgressReporter::report`]) to the
/// worker's lease keeper.
#[derive(Default)]
pub(crate) struct ProgressBox {
    pub(crate) state: Mutex<ProgressState>,
    /// Wakes the keeper: a report is pending.
    pub(crate) wake: Notify,
}

impl ProgressBox {
    /// The pending report, if any, cleared.
    pub(crate) fn take(&self) -> Option<Progress> {
        self.state.lock().ok().and_then(|mut s| s.pending.take())
    }
}

/// How a handler run by a [`Worker`](crate::Worker) reports its job's
/// progress: [`Delivery::progress`]. Cheap to clone (a clone reports for
/// the same delivery, from any task); all reporters compare equal, so a
/// [`Delivery`]'s equality is its `ctx` and `job`. The default one, which
/// a [`Delivery`] from [`SeppClient::reserve`](crate::SeppClient::reserve)
/// carries, belongs to no worker: its reports are refused.
#[derive(Clone, Default)]
pub struct ProgressReporter {
    inner: Option<Arc<ProgressBox>>,
}

impl ProgressReporter {
    pub(crate) fn attached(b: Arc<ProgressBox>) -> ProgressReporter {
        ProgressReporter { inner: Some(b) }
    }

    /// Reports the job's progress (`percent` 0..=100, `message` at most
    /// [`MAX_PROGRESS_MESSAGE_BYTES`] of UTF-8): [`SeppClient::get_job`],
    /// `list_jobs` and `wait_job` show it ([`Job::progress`]) until the
    /// delivery ends. It never blocks nor calls the server: the report
    /// rides on the worker's next lease extension, which it brings forward
    /// (to at most one extension per [`WorkerOptions::progress_interval`],
    /// by default a second); of reports made in between only the latest
    /// is sent.
    ///
    /// Out of bounds it is [`Error::InvalidArgument`] naming
    /// `progress.percent` or `progress.message`, and nothing is sent. A
    /// report the server refuses ([`Error::WrongState`] while some cluster
    /// member does not keep progress yet) is dropped, the lease extended
    /// without it, and the refusal passed to [`WorkerOptions::on_error`]
    /// once per delivery. A reporter of no worker (a delivery from
    /// `reserve`) is [`Error::WrongState`]: use
    /// [`SeppClient::report_progress`] there.
    ///
    /// [`SeppClient::get_job`]: crate::SeppClient::get_job
    /// [`SeppClient::report_progress`]: crate::SeppClient::report_progress
    /// [`WorkerOptions::progress_interval`]: crate::WorkerOptions::progress_interval
    /// [`WorkerOptions::on_error`]: crate::WorkerOptions::on_error
    pub fn report(&self, percent: u32, message: &str) -> Result<(), Error> {
        check_progress("progress", percent, message)?;
        let b = self.inner.as_ref().ok_or_else(|| Error::WrongState {
            op: "progress",
            message: "a delivery's progress outside a Worker (use SeppClient::report_progress)".to_string(),
        })?;
        if let Ok(mut s) = b.state.lock() {
            s.pending = Some(Progress { percent, message: message.to_string() });
        }
        b.wake.notify_one();
        Ok(())
    }
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressReporter").field("attached", &self.inner.is_some()).finish()
    }
}

impl PartialEq for ProgressReporter {
    fn eq(&self, _: &ProgressReporter) -> bool {
        true
    }
}

impl Eq for ProgressReporter {}

/// One delivery's handle: what ack, nack, release and extend_lease need.
/// `attempt` counts from 1; on `attempt == max_attempts` a failure
/// dead-letters the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobContext {
    pub job_id: u64,
    pub lease_token: u64,
    pub attempt: u32,
    pub max_attempts: u32,
    pub lease_deadline: Option<SystemTime>,
    pub queue: String,
    pub worker_id: String,
}

impl JobContext {
    pub(crate) fn from_wire(c: pb::JobContext) -> JobContext {
        JobContext {
            job_id: c.job_id,
            lease_token: c.lease_token,
            attempt: c.attempt,
            max_attempts: c.max_attempts,
            lease_deadline: c.lease_deadline.and_then(system_time),
            queue: c.queue,
            worker_id: c.worker_id,
        }
    }

    pub(crate) fn to_wire(&self) -> pb::JobContext {
        pb::JobContext {
            job_id: self.job_id,
            lease_token: self.lease_token,
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            lease_deadline: self.lease_deadline.map(timestamp),
            queue: self.queue.clone(),
            worker_id: self.worker_id.clone(),
        }
    }
}

/// A reserved job: its lease handle and the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub ctx: JobContext,
    pub job: Job,
    /// Reports the job's progress, for a handler run by a
    /// [`Worker`](crate::Worker): `d.progress.report(40, "4 of 10")?`
    /// (see [`ProgressReporter::report`]). Clone it to report from another
    /// task. Outside a Worker (the default) its reports are refused.
    pub progress: ProgressReporter,
}

impl Delivery {
    /// A delivery of job under ctx, with no worker's progress reporter.
    pub fn new(ctx: JobContext, job: Job) -> Delivery {
        Delivery { ctx, job, progress: ProgressReporter::default() }
    }
}

/// What an enqueue did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnqueueResult {
    pub job_id: u64,
    pub state: JobState,
    /// True when nothing was added: the idempotency key matched an earlier
    /// enqueue of the caller's, or another job holds the uniqueness key
    /// ([`EnqueueRequest::with_unique`]); `job_id` is then that job (and
    /// `state` Unspecified once it was acked). Never for this call's own
    /// retries.
    pub duplicate: bool,
    /// The key the enqueue carried (the caller's, or the one the client
    /// made).
    pub idempotency_key: String,
}

/// A dead-lettered job as a drain returns it (and removes it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetterRecord {
    pub job_id: u64,
    /// The job as it was when it died.
    pub job: Job,
    pub cause: DeadLetterCause,
    pub failed_at: Option<SystemTime>,
    pub final_attempt: u32,
    /// The last nack's reason, when a worker gave one.
    pub last_reason: Option<String>,
}

/// What [`SeppClient::wait_job`](crate::SeppClient::wait_job) answers: the
/// job and, once terminal, how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutcome {
    pub job: Job,
    /// True once the job completed or died.
    pub terminal: bool,
    /// Completed or Dead when terminal, the current state otherwise.
    pub state: JobState,
    /// The worker's result of a completed job (empty when none).
    pub result: Vec<u8>,
    /// Why a dead job died; Unspecified otherwise.
    pub cause: DeadLetterCause,
    /// When the job completed or died.
    pub finished_at: Option<SystemTime>,
}

impl JobOutcome {
    pub(crate) fn from_wire(r: pb::WaitJobResponse) -> JobOutcome {
        JobOutcome {
            job: Job::from_wire(r.job.unwrap_or_default()),
            terminal: r.terminal,
            state: JobState::from_wire(r.state),
            result: r.result,
            cause: DeadLetterCause::from_wire(r.cause),
            finished_at: r.finished_at.and_then(system_time),
        }
    }
}

impl DeadLetterRecord {
    pub(crate) fn from_wire(r: pb::DeadLetterRecord) -> DeadLetterRecord {
        let job = Job::from_wire(r.job.unwrap_or_default());
        DeadLetterRecord {
            job_id: job.id,
            job,
            cause: DeadLetterCause::from_wire(r.cause),
            failed_at: r.failed_at.and_then(system_time),
            final_attempt: r.final_attempt,
            last_reason: non_empty(r.last_reason),
        }
    }

    /// A fresh enqueue of the same job (queue, type, payload, priority,
    /// max_attempts, custom fields, trace context): the server gives it a new id and
    /// attempt 1. Not its old schedule, which has passed.
    pub fn to_enqueue_request(&self) -> EnqueueRequest {
        let mut r = EnqueueRequest::from_required(self.job.queue.clone(), self.job.job_type.clone());
        r.payload = self.job.payload.clone();
        r.priority = Priority::new(self.job.priority).ok();
        r.max_attempts = self.job.max_attempts;
        r.custom = self.job.custom.clone();
        r.trace_context = self.job.trace_context.clone();
        r
    }
}

/// What the answering node says about itself and the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerInfo {
    pub version: String,
    pub node_id: String,
    pub leader_id: String,
    /// The leader's API address (host:port); empty when none is known.
    pub leader_addr: String,
    pub dead_letter_retention_enabled: bool,
    pub max_reserve_batch: u32,
    pub max_schedule_horizon: Duration,
}

pub(crate) fn non_empty(s: String) -> Option<String> {
    if s.is_empty() {
        None
    } else {
        Some(s)
    }
}

pub(crate) fn timestamp(t: SystemTime) -> prost_types::Timestamp {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => prost_types::Timestamp {
            seconds: d.as_secs() as i64,
            nanos: d.subsec_nanos() as i32,
        },
        Err(before) => {
            let d = before.duration();
            let mut seconds = -(d.as_secs() as i64);
            let mut nanos = -(d.subsec_nanos() as i32);
            if nanos < 0 {
                seconds -= 1;
                nanos += 1_000_000_000;
            }
            prost_types::Timestamp { seconds, nanos }
        }
    }
}

/// The time of a timestamp; `None` for one out of range.
pub(crate) fn system_time(t: prost_types::Timestamp) -> Option<SystemTime> {
    if !(0..1_000_000_000).contains(&t.nanos) {
        return None;
    }
    if t.seconds >= 0 {
        UNIX_EPOCH.checked_add(Duration::new(t.seconds as u64, t.nanos as u32))
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(t.seconds.unsigned_abs()))?
            .checked_add(Duration::from_nanos(t.nanos as u64))
    }
}

pub(crate) fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: d.as_secs().min(i64::MAX as u64) as i64,
        nanos: d.subsec_nanos() as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_levels() {
        let cases: Vec<(u32, Option<Priority>)> = vec![(0, Some(Priority::MIN)), (5, Some(Priority::P5)), (9, Some(Priority::MAX)), (10, None), (u32::MAX, None)];
        for (level, want) in cases {
            let got = Priority::new(level).ok();
            assert_eq!(got, want, "level {}", level);
        }
        assert_eq!(Priority::MAX.level(), 9);
        assert!(Priority::P9 > Priority::P8);
    }

    #[test]
    fn enqueue_request_checks_names() {
        let cases = vec![("", "t", Some("queue")), ("q", "", Some("job_type")), ("q", "t", None)];
        for (queue, job_type, bad_field) in cases {
            match (EnqueueRequest::new(queue, job_type), bad_field) {
                (Ok(_), None) => {}
                (Err(Error::InvalidArgument { field, .. }), Some(want)) => assert_eq!(field, want),
                (other, want) => panic!("{:?}/{:?}: got {:?}, want field {:?}", queue, job_type, other, want),
            }
        }
    }

    #[test]
    fn enqueue_request_checks_the_ttl_as_the_go_client_does() {
        let cases: Vec<(Duration, Option<i64>)> = vec![
            (Duration::ZERO, Some(0)),
            (Duration::from_micros(999), None),
            (Duration::from_nanos(1), None),
            (Duration::from_millis(1), Some(1)),
            (Duration::from_micros(1500), Some(1)),
            (Duration::from_secs(900), Some(900_000)),
            (Duration::MAX, Some(i64::MAX)),
        ];
        for (ttl, want_ms) in cases {
            let r = EnqueueRequest::new("q", "t").unwrap().with_ttl(ttl);
            match (r.validate("enqueue batch", "jobs[2]"), want_ms) {
                (Ok(()), Some(ms)) => assert_eq!(r.to_wire("k").ttl_ms, ms, "{:?}", ttl),
                (Err(Error::InvalidArgument { field, limit, .. }), None) => {
                    assert_eq!(field, "jobs[2].ttl_ms", "{:?}", ttl);
                    assert_eq!(limit, ">= 1ms");
                }
                (got, want) => panic!("{:?}: got {:?}, want {:?}", ttl, got, want),
            }
        }
        match EnqueueRequest::new("q", "t").unwrap().with_ttl(Duration::from_nanos(5)).validate("enqueue", "") {
            Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, "ttl_ms"),
            other => panic!("{:?}", other),
        }
    }

    #[test]
    fn unique_and_expiry_go_on_the_wire() {
        let at = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let r = EnqueueRequest::new("q", "t")
            .unwrap()
            .with_unique(UniqueOptions::by_fields(["tenant", "region"]).with_cover_dead(true).with_completed_for(Duration::from_millis(60_500)).with_refuse(true))
            .with_expires_at(at);
        let w = r.to_wire("k");
        assert_eq!(
            w.unique,
            Some(pb::UniqueOptions {
                key: String::new(),
                fields: vec!["tenant".into(), "region".into()],
                cover_dead: true,
                completed_for_ms: 60_500,
                refuse: true,
            })
        );
        assert_eq!(w.expires_at, Some(timestamp(at)));
        assert_eq!(w.ttl_ms, 0);
        let plain = EnqueueRequest::new("q", "t").unwrap().to_wire("k");
        assert_eq!((plain.unique, plain.expires_at, plain.ttl_ms), (None, None, 0));
        assert_eq!(UniqueOptions::by_key("k1").to_wire().key, "k1");
    }

    #[test]
    fn dependencies_go_on_the_wire() {
        let r = EnqueueRequest::new("q", "stitch").unwrap().with_after([1, 2]).with_after([3]).with_on_parent_failure(ParentFailure::Run);
        assert_eq!(r.after(), &[1, 2, 3]);
        let w = r.to_wire("k");
        assert_eq!((w.after, w.on_parent_failure), (vec![1, 2, 3], pb::ParentFailurePolicy::Run as i32));
        let cancel = EnqueueRequest::new("q", "t").unwrap().with_after([0]).with_on_parent_failure(ParentFailure::Cancel).to_wire("k");
        assert_eq!(cancel.on_parent_failure, pb::ParentFailurePolicy::Cancel as i32);
        // Unset, the policy is left to the server (cancel); no parents.
        let plain = EnqueueRequest::new("q", "t").unwrap().to_wire("k");
        assert_eq!((plain.after, plain.on_parent_failure), (Vec::new(), 0));
        assert_eq!(ParentFailure::default(), ParentFailure::Cancel);
    }

    #[test]
    fn an_after_index_out_of_the_wires_range_is_refused_naming_it() {
        let r = EnqueueRequest::new("q", "t").unwrap().with_after([0, MAX_AFTER_INDEX]);
        assert!(r.validate("enqueue batch", "jobs[2]").is_ok());
        if let Some(big) = MAX_AFTER_INDEX.checked_add(1) {
            match r.with_after([big]).validate("enqueue batch", "jobs[2]") {
                Err(Error::InvalidArgument { field, limit, .. }) => assert_eq!((field.as_str(), limit.as_str()), ("jobs[2].after[2]", "an earlier request's index")),
                other => panic!("{:?}", other),
            }
        }
    }

    #[test]
    fn a_jobs_parents_and_policy_come_off_the_wire() {
        let parent = |id, state: pb::JobState, cause: pb::DeadLetterCause, ended| pb::JobParent { job_id: id, state: state as i32, cause: cause as i32, ended, ..Default::default() };
        let job = Job::from_wire(pb::Job {
            id: 9,
            state: pb::JobState::Blocked as i32,
            parents: vec![
                parent(7, pb::JobState::Dead, pb::DeadLetterCause::Rejected, true),
                parent(8, pb::JobState::Reserved, pb::DeadLetterCause::Unspecified, false),
                parent(6, pb::JobState::Unspecified, pb::DeadLetterCause::Unspecified, true),
                pb::JobParent { result_kept: true, result: b"five".to_vec(), ..parent(5, pb::JobState::Completed, pb::DeadLetterCause::Unspecified, true) },
                pb::JobParent { result_kept: true, result_omitted: true, ..parent(4, pb::JobState::Completed, pb::DeadLetterCause::Unspecified, true) },
            ],
            on_parent_failure: pb::ParentFailurePolicy::Run as i32,
            ..Default::default()
        });
        assert_eq!(job.state, JobState::Blocked);
        assert_eq!(
            job.parents,
            vec![
                JobParent { job_id: 7, state: JobState::Dead, cause: DeadLetterCause::Rejected, ended: true, result_kept: false, result: vec![], result_omitted: false },
                JobParent { job_id: 8, state: JobState::Reserved, cause: DeadLetterCause::Unspecified, ended: false, result_kept: false, result: vec![], result_omitted: false },
                JobParent { job_id: 6, state: JobState::Unspecified, cause: DeadLetterCause::Unspecified, ended: true, result_kept: false, result: vec![], result_omitted: false },
                JobParent { job_id: 5, state: JobState::Completed, cause: DeadLetterCause::Unspecified, ended: true, result_kept: true, result: b"five".to_vec(), result_omitted: false },
                JobParent { job_id: 4, state: JobState::Completed, cause: DeadLetterCause::Unspecified, ended: true, result_kept: true, result: vec![], result_omitted: true },
            ]
        );
        assert_eq!(job.on_parent_failure, Some(ParentFailure::Run));
        // With parents and no policy sent: the default, cancel; without
        // parents, none.
        let unsent = pb::Job { parents: vec![parent(1, pb::JobState::Completed, pb::DeadLetterCause::Unspecified, true)], ..Default::default() };
        assert_eq!(Job::from_wire(unsent).on_parent_failure, Some(ParentFailure::Cancel));
        let none = Job::from_wire(pb::Job::default());
        assert_eq!((none.parents.len(), none.on_parent_failure), (0, None));
        assert_eq!(JobState::Blocked.to_wire(), pb::JobState::Blocked);
    }

    #[test]
    fn a_jobs_waiting_children_come_off_the_wire() {
        // The first ids the server listed, and how many there are in all.
        let job = Job::from_wire(pb::Job { id: 3, waiting_children: vec![4, 9, 12], waiting_children_total: 250, ..Default::default() });
        assert_eq!((job.waiting_children, job.waiting_children_total), (vec![4, 9, 12], 250));
        let none = Job::from_wire(pb::Job::default());
        assert_eq!((none.waiting_children, none.waiting_children_total), (vec![], 0));
    }

    #[test]
    fn timestamps_round_trip() {
        let cases = vec![
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::new(1_764_000_000, 123_456_789),
            UNIX_EPOCH - Duration::new(5, 250_000_000),
        ];
        for t in cases {
            assert_eq!(system_time(timestamp(t)), Some(t), "{:?}", t);
        }
        assert_eq!(system_time(prost_types::Timestamp { seconds: 1, nanos: -1 }), None);
        assert_eq!(system_time(prost_types::Timestamp { seconds: 1, nanos: 1_000_000_000 }), None);
    }

    #[test]
    fn dead_letter_record_replays_the_job_fields() {
        let mut custom = std::collections::HashMap::new();
        custom.insert("tenant".to_string(), "acme".to_string());
        let record = DeadLetterRecord::from_wire(pb::DeadLetterRecord {
            job: Some(pb::Job {
                id: 42,
                queue: "emails".into(),
                job_type: "welcome".into(),
                payload: b"hi".to_vec(),
                priority: 7,
                max_attempts: 5,
                attempt: 5,
                custom,
                scheduled_at: Some(timestamp(UNIX_EPOCH + Duration::from_secs(10))),
                ..Default::default()
            }),
            cause: pb::DeadLetterCause::AttemptsExhausted as i32,
            failed_at: None,
            final_attempt: 5,
            last_reason: String::new(),
        });
        assert_eq!(record.job_id, 42);
        assert_eq!(record.cause, DeadLetterCause::AttemptsExhausted);
        assert_eq!(record.last_reason, None);
        let replay = record.to_enqueue_request();
        let want = EnqueueRequest::new("emails", "welcome")
            .unwrap()
            .with_payload(b"hi".to_vec())
            .with_priority(Priority::P7)
            .with_max_attempts(5)
            .with_custom("tenant", "acme");
        assert_eq!(replay, want);
    }
}
