//! The operator calls (AdminService) of [`SeppClient`]: queues as managed
//! objects, reads and actions on live jobs and dead letters, and redrive
//! tasks, with the values they take and return. The Go client's admin
//! surface (`client/admin.go`, `queues.go`, `jobactions.go`, `redrive.go`)
//! is the model.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

use crate::client::{item_error, Policy, SeppClient};
use crate::error::Error;
use crate::pb;
// QueueSettings, RetryBackoff and their conversions to and from the wire
// are generated from the proto (make generate, tools/protoc-gen-sepp-sdk):
// a setting added there needs no edit here.
pub use crate::queue_settings::{QueueSettings, RetryBackoff};
use crate::types::{system_time, timestamp, DeadLetterCause, DeadLetterRecord, Job, JobState};

/// One queue's counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStats {
    pub name: String,
    pub paused: bool,
    /// Named in the server config (`[[queues]]`).
    pub configured: bool,
    pub scheduled: u64,
    pub ready: u64,
    pub reserved: u64,
    /// Jobs waiting for their parents ([`JobState::Blocked`]).
    pub blocked: u64,
    /// Retained dead-letter records.
    pub dead: u64,
    /// How long the oldest Ready job has waited; zero when none.
    pub oldest_ready_age: Duration,
    pub enqueued_total: u64,
    pub acked_total: u64,
    /// The jobs ever dead-lettered, by cause.
    pub dead_lettered_total: HashMap<DeadLetterCause, u64>,
    /// Dead jobs dropped because retention is off.
    pub dropped_total: u64,
    /// Waiting jobs an operator purged.
    pub purged_total: u64,
    /// The queue's tags (key/value labels), by key; empty when it has none.
    pub tags: BTreeMap<String, String>,
}

impl QueueStats {
    fn from_wire(q: pb::QueueSummary) -> QueueStats {
        let mut by_cause = HashMap::new();
        for c in q.dead_lettered_total {
            *by_cause.entry(DeadLetterCause::from_wire(c.cause)).or_insert(0) += c.count;
        }
        let age = q.oldest_ready_age.map(|d| Duration::new(d.seconds.max(0) as u64, d.nanos.max(0) as u32)).unwrap_or_default();
        QueueStats {
            name: q.name,
            paused: q.paused,
            configured: q.configured,
            scheduled: q.scheduled,
            ready: q.ready,
            reserved: q.reserved,
            blocked: q.blocked,
            dead: q.dead,
            oldest_ready_age: age,
            enqueued_total: q.enqueued_total,
            acked_total: q.acked_total,
            dead_lettered_total: by_cause,
            dropped_total: q.dropped_total,
            purged_total: q.purged_total,
            tags: q.tags.into_iter().collect(),
        }
    }
}

/// One queue: its counts, its own settings and what it runs with
/// (`effective`: its settings over the global limits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueInfo {
    pub stats: QueueStats,
    pub settings: QueueSettings,
    pub effective: QueueSettings,
}

/// What [`SeppClient::update_queue`] changes: the `Some` fields of
/// `settings` replace the queue's own, `inherit` names settings to drop
/// (`"default_priority"`, `"retry_delay_ms"`, ...) so the global value
/// applies again, `paused` pauses (`Some(true)`) or resumes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueUpdate {
    pub settings: QueueSettings,
    pub inherit: Vec<String>,
    pub paused: Option<bool>,
}

/// What a delete or purge of a queue removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueRemoval {
    pub jobs: u64,
    pub dead_letters: u64,
}

/// What [`SeppClient::purge_queue`] removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PurgeTarget {
    /// Ready and Scheduled jobs, retries waiting included; reserved ones stay.
    Waiting,
    /// The queue's retained dead letters.
    DeadLetters,
}

/// The outcome of an operator action on one job id: `error` is `None` on
/// success, else the error the action met for that job alone.
#[derive(Clone, Debug)]
pub struct ActionResult {
    pub job_id: u64,
    pub error: Option<Error>,
}

/// A redrive task's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedriveState {
    Unspecified,
    Running,
    Paused,
    Cancelled,
    Done,
}

impl RedriveState {
    fn from_wire(v: i32) -> RedriveState {
        match pb::RedriveState::from_i32(v) {
            Some(pb::RedriveState::Running) => RedriveState::Running,
            Some(pb::RedriveState::Paused) => RedriveState::Paused,
            Some(pb::RedriveState::Cancelled) => RedriveState::Cancelled,
            Some(pb::RedriveState::Done) => RedriveState::Done,
            _ => RedriveState::Unspecified,
        }
    }
}

/// The dead letters a redrive moves; an empty (or `None`) field matches
/// all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedriveSelection {
    pub queue: String,
    pub cause: Option<DeadLetterCause>,
    pub job_type: String,
    /// A substring of the record's last reason.
    pub reason_contains: String,
    /// Failed at or after.
    pub failed_after: Option<SystemTime>,
    /// Failed before.
    pub failed_before: Option<SystemTime>,
}

/// A redrive: the records `selection` matches go back to their queue with
/// their ids and attempts reset, or, with `fresh`, are replayed as new
/// jobs (to `to_queue` when not empty; it must exist), at `rate` jobs per
/// second (1..=10000; 0 lets the server use 100).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedriveOptions {
    pub selection: RedriveSelection,
    pub to_queue: String,
    pub fresh: bool,
    pub rate: u32,
}

impl RedriveOptions {
    fn to_wire(&self) -> pb::StartRedriveRequest {
        let s = &self.selection;
        pb::StartRedriveRequest {
            selection: Some(pb::RedriveSelection {
                queue: s.queue.clone(),
                cause: s.cause.map(|c| c.to_wire() as i32).unwrap_or(0),
                job_type: s.job_type.clone(),
                reason_contains: s.reason_contains.clone(),
                failed_after: s.failed_after.map(timestamp),
                failed_before: s.failed_before.map(timestamp),
            }),
            to_queue: self.to_queue.clone(),
            fresh: self.fresh,
            rate: self.rate,
        }
    }
}

/// A redrive task and, once ended, its audit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedriveTask {
    pub id: u64,
    pub options: RedriveOptions,
    pub state: RedriveState,
    pub moved: u64,
    /// Matching records still to move (0 once ended).
    pub remaining: u64,
    /// The highest record (job) id handled.
    pub cursor: u64,
    pub last_error: String,
    /// The token name that started it ("" when admin auth is off).
    pub created_by: String,
    pub created_at: Option<SystemTime>,
    pub updated_at: Option<SystemTime>,
    pub ended_at: Option<SystemTime>,
    pub ended_by: String,
}

impl RedriveTask {
    fn from_wire(t: pb::RedriveTask) -> RedriveTask {
        let s = t.selection.unwrap_or_default();
        RedriveTask {
            id: t.id,
            options: RedriveOptions {
                selection: RedriveSelection {
                    queue: s.queue,
                    cause: if s.cause == 0 { None } else { Some(DeadLetterCause::from_wire(s.cause)) },
                    job_type: s.job_type,
                    reason_contains: s.reason_contains,
                    failed_after: s.failed_after.and_then(system_time),
                    failed_before: s.failed_before.and_then(system_time),
                },
                to_queue: t.to_queue,
                fresh: t.fresh,
                rate: t.rate,
            },
            state: RedriveState::from_wire(t.state),
            moved: t.moved,
            remaining: t.remaining,
            cursor: t.cursor,
            last_error: t.last_error,
            created_by: t.created_by,
            created_at: t.created_at.and_then(system_time),
            updated_at: t.updated_at.and_then(system_time),
            ended_at: t.ended_at.and_then(system_time),
            ended_by: t.ended_by,
        }
    }
}

/// What a redrive would move: how many records, and the first of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedrivePreview {
    pub matching: u64,
    pub sample: Vec<DeadLetterRecord>,
}

/// A page of [`SeppClient::list_jobs_page`] or
/// [`SeppClient::list_dead_letters`]: start after `after_job_id`
/// (exclusive; 0 at the beginning), at most `limit` (0: 100; the server
/// clamps to 1000).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub after_job_id: u64,
    pub limit: u32,
}

fn actions(op: &'static str, results: Vec<pb::JobActionResult>) -> Vec<ActionResult> {
    results
        .into_iter()
        .map(|r| ActionResult {
            job_id: r.job_id,
            error: r.error.map(|e| item_error(op, e)),
        })
        .collect()
}

fn task_of(op: &'static str, t: Option<pb::RedriveTask>) -> Result<RedriveTask, Error> {
    t.map(RedriveTask::from_wire).ok_or_else(|| Error::internal(op, "the server answered no task"))
}

const NO_EXTRA: Duration = Duration::ZERO;

impl SeppClient {
    // ---- reads ----

    /// Every known queue with its counts.
    pub async fn list_queues(&self) -> Result<Vec<QueueStats>, Error> {
        self.list_queues_by_tag(&[]).await
    }

    /// The queues whose tags match every term: `"key=value"` (the tag with
    /// that value) or `"key"` (the tag, any value); no term lists every
    /// queue, as [`SeppClient::list_queues`] does.
    pub async fn list_queues_by_tag(&self, terms: &[&str]) -> Result<Vec<QueueStats>, Error> {
        let req = pb::ListQueuesRequest { allow_stale: false, tag: terms.iter().map(|t| t.to_string()).collect() };
        let (r, _): (pb::ListQueuesResponse, bool) = self.call("list queues", "sepp.v1.AdminService/ListQueues", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(r.queues.into_iter().map(QueueStats::from_wire).collect())
    }

    /// A page of a queue's jobs in one state (Scheduled, Ready, Reserved,
    /// Blocked, or Completed where the queue keeps completed jobs), by id, and the `after_job_id` of the next page (0: this
    /// page is the last).
    pub async fn list_jobs_page(&self, queue: &str, state: JobState, page: Page) -> Result<(Vec<Job>, u64), Error> {
        let req = pb::ListJobsRequest {
            queue: queue.to_string(),
            state: state.to_wire() as i32,
            after_job_id: page.after_job_id,
            limit: page.limit,
            allow_stale: false,
        };
        let (r, _): (pb::ListJobsResponse, bool) = self.call("list jobs", "sepp.v1.AdminService/ListJobs", &req, Policy::Safe, NO_EXTRA).await?;
        Ok((r.jobs.into_iter().map(Job::from_wire).collect(), r.next_after_job_id))
    }

    /// A page of retained dead letters of `queue` ("": every queue),
    /// without consuming them, and the `after_job_id` of the next page.
    pub async fn list_dead_letters(&self, queue: &str, page: Page) -> Result<(Vec<DeadLetterRecord>, u64), Error> {
        let req = pb::ListDeadLettersRequest {
            queue: queue.to_string(),
            after_job_id: page.after_job_id,
            limit: page.limit,
            allow_stale: false,
        };
        let (r, _): (pb::ListDeadLettersResponse, bool) = self.call("list dead letters", "sepp.v1.AdminService/ListDeadLetters", &req, Policy::Safe, NO_EXTRA).await?;
        Ok((r.records.into_iter().map(DeadLetterRecord::from_wire).collect(), r.next_after_job_id))
    }

    /// One retained dead letter ([`Error::NotFound`] when there is none).
    pub async fn get_dead_letter(&self, job_id: u64) -> Result<DeadLetterRecord, Error> {
        let (r, _): (pb::GetDeadLetterResponse, bool) = self.call("get dead letter", "sepp.v1.AdminService/GetDeadLetter", &pb::GetDeadLetterRequest { job_id, allow_stale: false }, Policy::Safe, NO_EXTRA).await?;
        r.record.map(DeadLetterRecord::from_wire).ok_or_else(|| Error::internal("get dead letter", "the server answered no record"))
    }

    // ---- actions on dead letters and live jobs (one result per id) ----

    /// Puts dead letters back Ready on their queue with their ids,
    /// attempts reset.
    pub async fn requeue_dead_letters(&self, job_ids: &[u64]) -> Result<Vec<ActionResult>, Error> {
        let op = "requeue dead letters";
        let (r, _): (pb::RequeueDeadLettersResponse, bool) = self.call(op, "sepp.v1.AdminService/RequeueDeadLetters", &pb::RequeueDeadLettersRequest { job_ids: job_ids.to_vec() }, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    /// Removes dead letters for good.
    pub async fn delete_dead_letters(&self, job_ids: &[u64]) -> Result<Vec<ActionResult>, Error> {
        let op = "delete dead letters";
        let (r, _): (pb::DeleteDeadLettersResponse, bool) = self.call(op, "sepp.v1.AdminService/DeleteDeadLetters", &pb::DeleteDeadLettersRequest { job_ids: job_ids.to_vec() }, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    /// Dead-letters live Ready or Scheduled jobs with cause Admin and
    /// `reason` as their last reason.
    pub async fn dead_letter_jobs(&self, job_ids: &[u64], reason: &str) -> Result<Vec<ActionResult>, Error> {
        let op = "dead-letter jobs";
        let req = pb::DeadLetterJobsRequest {
            job_ids: job_ids.to_vec(),
            reason: reason.to_string(),
        };
        let (r, _): (pb::DeadLetterJobsResponse, bool) = self.call(op, "sepp.v1.AdminService/DeadLetterJobs", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    /// Removes Ready or Scheduled jobs for good; a reserved one is
    /// [`Error::WrongState`] in its result.
    pub async fn delete_jobs(&self, job_ids: &[u64]) -> Result<Vec<ActionResult>, Error> {
        let op = "delete jobs";
        let (r, _): (pb::DeleteJobsResponse, bool) = self.call(op, "sepp.v1.AdminService/DeleteJobs", &pb::DeleteJobsRequest { job_ids: job_ids.to_vec() }, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    /// Makes Scheduled jobs Ready now.
    pub async fn run_jobs_now(&self, job_ids: &[u64]) -> Result<Vec<ActionResult>, Error> {
        let op = "run jobs now";
        let (r, _): (pb::RunJobsNowResponse, bool) = self.call(op, "sepp.v1.AdminService/RunJobsNow", &pb::RunJobsNowRequest { job_ids: job_ids.to_vec() }, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    /// Holds Ready or Scheduled jobs until `run_at` (at or before now:
    /// Ready); beyond the queue's horizon is [`Error::ScheduledTooFar`] in
    /// the job's result.
    pub async fn reschedule_jobs(&self, job_ids: &[u64], run_at: SystemTime) -> Result<Vec<ActionResult>, Error> {
        let op = "reschedule jobs";
        let req = pb::RescheduleJobsRequest {
            job_ids: job_ids.to_vec(),
            run_at: Some(timestamp(run_at)),
        };
        let (r, _): (pb::RescheduleJobsResponse, bool) = self.call(op, "sepp.v1.AdminService/RescheduleJobs", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    /// Gives live jobs a priority (0..=9); a Ready job takes its place by
    /// it and its original enqueue time.
    pub async fn set_jobs_priority(&self, job_ids: &[u64], priority: u32) -> Result<Vec<ActionResult>, Error> {
        let op = "set jobs priority";
        let req = pb::SetJobsPriorityRequest {
            job_ids: job_ids.to_vec(),
            priority,
        };
        let (r, _): (pb::SetJobsPriorityResponse, bool) = self.call(op, "sepp.v1.AdminService/SetJobsPriority", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    /// Cancels Reserved jobs: each lease is revoked at once (the worker's
    /// next extend, ack or nack is [`Error::JobCancelled`]) and the job is
    /// dead-lettered with cause Cancelled, or removed when `delete`. A job
    /// no worker holds is [`Error::WrongState`] in its result. `reason`
    /// ("": "cancelled by an operator") becomes the job's last reason.
    pub async fn cancel_jobs(&self, job_ids: &[u64], delete: bool, reason: &str) -> Result<Vec<ActionResult>, Error> {
        let op = "cancel jobs";
        let req = pb::CancelJobsRequest {
            job_ids: job_ids.to_vec(),
            delete,
            reason: reason.to_string(),
        };
        let (r, _): (pb::CancelJobsResponse, bool) = self.call(op, "sepp.v1.AdminService/CancelJobs", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(actions(op, r.results))
    }

    // ---- queues ----

    /// Stops reserves handing out the queue's jobs; enqueues go on.
    pub async fn pause_queue(&self, queue: &str) -> Result<(), Error> {
        let _: (pb::PauseQueueResponse, bool) = self.call("pause queue", "sepp.v1.AdminService/PauseQueue", &pb::PauseQueueRequest { queue: queue.to_string() }, Policy::Safe, NO_EXTRA).await?;
        Ok(())
    }

    /// Undoes [`SeppClient::pause_queue`].
    pub async fn resume_queue(&self, queue: &str) -> Result<(), Error> {
        let _: (pb::ResumeQueueResponse, bool) = self.call("resume queue", "sepp.v1.AdminService/ResumeQueue", &pb::ResumeQueueRequest { queue: queue.to_string() }, Policy::Safe, NO_EXTRA).await?;
        Ok(())
    }

    /// Adds a queue with its own settings (`None` fields inherit) and
    /// returns what it runs with. A queue that exists is
    /// [`Error::AlreadyExists`], a setting out of range
    /// [`Error::InvalidArgument`] naming it, a `dead_letter_queue` that
    /// does not exist [`Error::NotFound`]. Not retried once it may have
    /// applied (the retry would find it).
    pub async fn create_queue(&self, name: &str, settings: &QueueSettings, paused: bool) -> Result<QueueSettings, Error> {
        let req = pb::CreateQueueRequest {
            name: name.to_string(),
            settings: Some(settings.to_wire()),
            paused,
        };
        let (r, _): (pb::CreateQueueResponse, bool) = self.call("create queue", "sepp.v1.AdminService/CreateQueue", &req, Policy::NotSent, NO_EXTRA).await?;
        Ok(QueueSettings::from_limits(r.effective.unwrap_or_default()))
    }

    /// One queue: its counts, own settings and effective settings
    /// ([`Error::NotFound`] when there is no such queue).
    pub async fn get_queue(&self, name: &str) -> Result<QueueInfo, Error> {
        let req = pb::GetQueueRequest {
            name: name.to_string(),
            allow_stale: false,
        };
        let (r, _): (pb::GetQueueResponse, bool) = self.call("get queue", "sepp.v1.AdminService/GetQueue", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(QueueInfo {
            stats: QueueStats::from_wire(r.summary.unwrap_or_default()),
            settings: QueueSettings::from_wire(r.settings.unwrap_or_default()),
            effective: QueueSettings::from_limits(r.effective.unwrap_or_default()),
        })
    }

    /// Changes a queue (see [`QueueUpdate`]) and returns its effective
    /// settings; an unknown queue is [`Error::NotFound`]. Idempotent, so
    /// retried.
    pub async fn update_queue(&self, name: &str, update: &QueueUpdate) -> Result<QueueSettings, Error> {
        let req = pb::UpdateQueueRequest {
            name: name.to_string(),
            settings: Some(update.settings.to_wire()),
            inherit: update.inherit.clone(),
            paused: update.paused,
        };
        let (r, _): (pb::UpdateQueueResponse, bool) = self.call("update queue", "sepp.v1.AdminService/UpdateQueue", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(QueueSettings::from_limits(r.effective.unwrap_or_default()))
    }

    /// Removes a queue. One holding jobs or dead letters is
    /// [`Error::WrongState`] unless `force`, which removes them and counts
    /// them. Not retried once it may have applied.
    pub async fn delete_queue(&self, name: &str, force: bool) -> Result<QueueRemoval, Error> {
        let req = pb::DeleteQueueRequest { name: name.to_string(), force };
        let (r, _): (pb::DeleteQueueResponse, bool) = self.call("delete queue", "sepp.v1.AdminService/DeleteQueue", &req, Policy::NotSent, NO_EXTRA).await?;
        Ok(QueueRemoval {
            jobs: r.jobs_removed,
            dead_letters: r.dead_letters_removed,
        })
    }

    /// Removes a queue's waiting jobs (reserved ones stay) or its dead
    /// letters, and counts them. Not retried once it may have applied.
    pub async fn purge_queue(&self, name: &str, target: PurgeTarget) -> Result<QueueRemoval, Error> {
        let target = match target {
            PurgeTarget::Waiting => pb::PurgeTarget::Waiting,
            PurgeTarget::DeadLetters => pb::PurgeTarget::DeadLetters,
        };
        let req = pb::PurgeQueueRequest {
            name: name.to_string(),
            target: target as i32,
        };
        let (r, _): (pb::PurgeQueueResponse, bool) = self.call("purge queue", "sepp.v1.AdminService/PurgeQueue", &req, Policy::NotSent, NO_EXTRA).await?;
        Ok(QueueRemoval {
            jobs: r.jobs_removed,
            dead_letters: r.dead_letters_removed,
        })
    }

    // ---- redrive ----

    /// What [`SeppClient::start_redrive`] would move, without starting
    /// it: the count and the first `sample` records (0: 10).
    pub async fn preview_redrive(&self, options: &RedriveOptions, sample: u32) -> Result<RedrivePreview, Error> {
        let req = pb::PreviewRedriveRequest {
            redrive: Some(options.to_wire()),
            sample,
        };
        let (r, _): (pb::PreviewRedriveResponse, bool) = self.call("preview redrive", "sepp.v1.AdminService/PreviewRedrive", &req, Policy::Safe, NO_EXTRA).await?;
        Ok(RedrivePreview {
            matching: r.matching,
            sample: r.sample.into_iter().map(DeadLetterRecord::from_wire).collect(),
        })
    }

    /// Starts a redrive task over the dead letters failed by now that the
    /// selection matches. Not retried once it may have applied (a retry
    /// would start a second task).
    pub async fn start_redrive(&self, options: &RedriveOptions) -> Result<RedriveTask, Error> {
        let op = "start redrive";
        let (r, _): (pb::StartRedriveResponse, bool) = self.call(op, "sepp.v1.AdminService/StartRedrive", &options.to_wire(), Policy::NotSent, NO_EXTRA).await?;
        task_of(op, r.task)
    }

    /// The running and paused tasks and the last ended ones.
    pub async fn list_redrives(&self) -> Result<Vec<RedriveTask>, Error> {
        let (r, _): (pb::ListRedrivesResponse, bool) = self.call("list redrives", "sepp.v1.AdminService/ListRedrives", &pb::ListRedrivesRequest { allow_stale: false }, Policy::Safe, NO_EXTRA).await?;
        Ok(r.tasks.into_iter().map(RedriveTask::from_wire).collect())
    }

    /// One task or audit record ([`Error::NotFound`] when there is none).
    pub async fn get_redrive(&self, id: u64) -> Result<RedriveTask, Error> {
        let op = "get redrive";
        let (r, _): (pb::GetRedriveResponse, bool) = self.call(op, "sepp.v1.AdminService/GetRedrive", &pb::GetRedriveRequest { id, allow_stale: false }, Policy::Safe, NO_EXTRA).await?;
        task_of(op, r.task)
    }

    /// Pauses a running task; one in another state is [`Error::WrongState`].
    pub async fn pause_redrive(&self, id: u64) -> Result<RedriveTask, Error> {
        let op = "pause redrive";
        let (r, _): (pb::PauseRedriveResponse, bool) = self.call(op, "sepp.v1.AdminService/PauseRedrive", &pb::PauseRedriveRequest { id }, Policy::Safe, NO_EXTRA).await?;
        task_of(op, r.task)
    }

    /// Resumes a paused task; one in another state is [`Error::WrongState`].
    pub async fn resume_redrive(&self, id: u64) -> Result<RedriveTask, Error> {
        let op = "resume redrive";
        let (r, _): (pb::ResumeRedriveResponse, bool) = self.call(op, "sepp.v1.AdminService/ResumeRedrive", &pb::ResumeRedriveRequest { id }, Policy::Safe, NO_EXTRA).await?;
        task_of(op, r.task)
    }

    /// Ends a running or paused task; what it moved stays moved.
    pub async fn cancel_redrive(&self, id: u64) -> Result<RedriveTask, Error> {
        let op = "cancel redrive";
        let (r, _): (pb::CancelRedriveResponse, bool) = self.call(op, "sepp.v1.AdminService/CancelRedrive", &pb::CancelRedriveRequest { id }, Policy::Safe, NO_EXTRA).await?;
        task_of(op, r.task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_settings_round_trip_keeps_what_is_unset_unset() {
        let s = QueueSettings {
            default_priority: Some(0),
            retry_delay: Some(Duration::from_millis(1500)),
            retry_backoff: Some(RetryBackoff::Exponential),
            max_length: Some(0),
            dead_letter_queue: Some(String::new()),
            rate_period: Some(Duration::from_secs(2)),
            ..QueueSettings::default()
        };
        let w = s.to_wire();
        // Zero and "" are values, sent as set (an update to 0 or "" drops a limit).
        assert_eq!((w.default_priority, w.max_length, w.dead_letter_queue.as_deref()), (Some(0), Some(0), Some("")));
        assert_eq!((w.default_max_attempts, w.max_wait_ms), (None, None));
        assert_eq!((w.retry_delay_ms, w.rate_period_ms, w.retry_backoff), (Some(1500), Some(2000), Some(pb::RetryBackoff::Exponential as i32)));
        assert_eq!(QueueSettings::from_wire(w), s);
    }

    #[test]
    fn effective_settings_are_all_set() {
        let e = QueueSettings::from_limits(pb::QueueLimits {
            default_max_attempts: 3,
            retry_delay_ms: 250,
            ..pb::QueueLimits::default()
        });
        assert_eq!((e.default_max_attempts, e.retry_delay, e.retry_backoff), (Some(3), Some(Duration::from_millis(250)), Some(RetryBackoff::None)));
        assert_eq!((e.max_length, e.dead_letter_queue.as_deref(), e.max_per_key), (Some(0), Some(""), Some(0)));
    }

    #[test]
    fn redrive_options_to_wire() {
        let o = RedriveOptions {
            selection: RedriveSelection {
                queue: "q".into(),
                cause: Some(DeadLetterCause::Admin),
                ..RedriveSelection::default()
            },
            to_queue: "r".into(),
            fresh: true,
            rate: 50,
        };
        let w = o.to_wire();
        let sel = w.selection.clone().unwrap_or_default();
        assert_eq!((sel.queue.as_str(), sel.cause, w.to_queue.as_str(), w.fresh, w.rate), ("q", pb::DeadLetterCause::Admin as i32, "r", true, 50));
        assert!(sel.failed_after.is_none());
        let back = RedriveTask::from_wire(pb::RedriveTask {
            selection: w.selection,
            to_queue: w.to_queue,
            fresh: w.fresh,
            rate: w.rate,
            ..pb::RedriveTask::default()
        });
        assert_eq!(back.options, o);
    }
}
