//! `sepp_rs`: the Rust client and worker of the sepp job queue.
//!
//! ```no_run
//! use sepp_rs::client::SeppClient;
//! use sepp_rs::{EnqueueRequest, Priority};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = SeppClient::connect("http://localhost:50051").await?;
//! let request = EnqueueRequest::new("emails", "password_reset")?.with_priority(Priority::MAX);
//! client.enqueue(request).await?;
//! # Ok(())
//! # }
//! ```
//!
//! The crate owns the client side of the public API (`proto/sepp/v1`): the
//! calls ([`client::SeppClient`]), the values they take and return, the
//! typed [`Error`] built from the server's status details, and the
//! [`worker::Worker`] that runs handlers. It speaks the Connect protocol
//! (binary protobuf over HTTP/1.1) to the API port; `transport` is the only
//! module that knows it.

pub mod admin;
pub mod client;
mod enqueue;
#[cfg(test)]
mod enqueue_tests;
mod error;
mod job;
#[cfg(test)]
mod job_tests;
mod queue_settings;
mod schedule;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;
mod types;
pub mod worker;
mod workflow;

/// The public API's messages as prost generates them from `proto/sepp/v1`
/// (committed, so building the crate needs no protoc).
pub mod pb {
    #![allow(clippy::all)]
    include!("pb/sepp.v1.rs");
}

pub use admin::{ActionResult, Page, PurgeTarget, QueueInfo, QueueRemoval, QueueSettings, QueueStats, QueueUpdate, RedriveOptions, RedrivePreview, RedriveSelection, RedriveState, RedriveTask, RetryBackoff};
pub use client::{ClientOptions, ReserveOptions, RetryDirective, SeppClient, TraceInjector};
pub use error::{Code, Error};
pub use schedule::{JobTemplate, Schedule, ScheduleCatchUp, ScheduleDefinition, ScheduleOverlap, ScheduleSpec};
pub use types::{DeadLetterCause, DeadLetterRecord, Delivery, EnqueueRequest, EnqueueResult, Job, JobAttempt, JobContext, JobOrigin, JobOutcome, JobParent, JobState, ParentFailure, Priority, Progress, ProgressReporter, ServerInfo, TraceContext, UniqueOptions, MAX_PROGRESS_MESSAGE_BYTES};
pub use worker::{BoxError, Completion, HandlerError, HandlerFuture, InstrumentHook, JobResult, RunningWorker, Worker, WorkerOptions};
pub use workflow::ParentResult;
