//! Workflows: jobs of one call that wait for each other. A job enqueued
//! with [`EnqueueRequest::with_after`] (in an
//! [`enqueue_batch`](SeppClient::enqueue_batch) or among an ack's
//! follow-ups) is [`JobState::Blocked`] until the earlier jobs it names
//! have ended; then it runs if each completed, else as its
//! [`ParentFailure`] says: cancelled (dead-lettered with
//! [`DeadLetterCause::Cancelled`]), or run whatever the outcomes, as a
//! batch's callback. The job carries its parents and how each ended
//! ([`Job::parents`]; a delivery's, the completed ones' kept results too);
//! [`SeppClient::parent_results`] gives their results.
//!
//! [`EnqueueRequest::with_after`]: crate::EnqueueRequest::with_after
//! [`JobState::Blocked`]: crate::JobState::Blocked
//! [`ParentFailure`]: crate::ParentFailure
//! [`DeadLetterCause::Cancelled`]: crate::DeadLetterCause::Cancelled
//! [`Job::parents`]: crate::Job::parents

use crate::client::SeppClient;
use crate::error::Error;
use crate::types::{JobParent, JobState};

/// A parent of a job ([`JobParent`], as given) with its result, which
/// the server keeps while the parent's queue keeps completed jobs
/// (`QueueSettings::completed_retention`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentResult {
    pub parent: JobParent,
    /// A completed parent's result (empty when it gave none) while the
    /// server still holds it; `None` for a parent that did not complete,
    /// or whose queue keeps no completed jobs (or kept it past its
    /// retention).
    pub result: Option<Vec<u8>>,
}

impl SeppClient {
    /// The results of `parents`, a job's [`Job::parents`] (a
    /// [`Worker`](crate::Worker)'s handler has them in
    /// `delivery.job.parents`), in their order. A delivery's and
    /// [`get_job`](SeppClient::get_job)'s parents come with their kept
    /// results (`result_kept`), up to a bound per answer; for a completed
    /// parent whose result the answer left out (`result_omitted`), or that
    /// came from elsewhere (such as [`list_jobs`](SeppClient::list_jobs)),
    /// it makes a get_job of the parent, which needs a token with the
    /// viewer role. A callback enqueued after a
    /// batch ([`ParentFailure::Run`](crate::ParentFailure::Run)) reads its
    /// members' outcomes and results so. A completed parent the server no
    /// longer holds has no result; any other failure of a read fails the
    /// call.
    ///
    /// [`Job::parents`]: crate::Job::parents
    pub async fn parent_results(&self, parents: &[JobParent]) -> Result<Vec<ParentResult>, Error> {
        let mut out = Vec::with_capacity(parents.len());
        for p in parents {
            let result = if p.state == JobState::Completed && p.result_kept && !p.result_omitted {
                Some(p.result.clone()) // carried by the answer
            } else if p.state == JobState::Completed {
                match self.get_job(p.job_id).await {
                    Ok(job) => Some(job.result),
                    // Completed, its record not kept.
                    Err(Error::NotFound { .. }) => None,
                    Err(e) => return Err(e),
                }
            } else {
                None
            };
            out.push(ParentResult { parent: p.clone(), result });
        }
        Ok(out)
    }
}
