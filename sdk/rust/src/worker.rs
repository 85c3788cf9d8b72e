//! [`Worker`]: reserves jobs, runs the handler registered for each, keeps
//! its lease alive while it runs, and answers for it: ack on `Ok`, a nack
//! whose directive the [`HandlerError`] picks on `Err`.
//!
//! A handler's `Ok` value is the job's result (see [`JobResult`]): `Ok(())`
//! acks plainly, `Ok(bytes)` (a `Vec<u8>`, or `Option<Vec<u8>>`) completes
//! the job with that result, as the Go client's `Delivery.SetResult` does:
//! the worker acks with [`SeppClient::ack_with_result`], so
//! [`SeppClient::wait_job`] and [`SeppClient::get_job`] return it. The
//! job's queue must keep completed jobs (`completed_retention`), and the
//! result be at most the server's `max_result_bytes`. A result the server
//! refuses reaches [`WorkerOptions::on_error`] as the typed error, as with
//! the Go worker: [`Error::WrongState`] (the queue keeps no completed jobs,
//! or the cluster is not yet upgraded; the lease is still held) is followed
//! by an ack without the result, so the job ran once and is not run again;
//! any other failure of that ack ([`Error::InvalidArgument`] over
//! `max_result_bytes`, [`Error::LeaseLost`], ...) leaves the job unacked,
//! and it is delivered again once its lease expires.
//!
//! A handler that returns `Ok(Completion { result, follow_ups })`
//! ([`Completion`]) also enqueues the follow-ups with its ack, in the same
//! log entry ([`SeppClient::ack_with_follow_ups`]): all or nothing, fenced by
//! the lease. Follow-ups the server refuses leave the job uncompleted: the
//! refusal reaches [`WorkerOptions::on_error`] and the job is nacked to run
//! again by its queue's retry policy, as the Go worker does.
//!
//! A handler reports its job's progress with
//! `delivery.progress.report(percent, message)` ([`ProgressReporter::report`],
//! the Go client's `Delivery.Progress`): it never blocks, and the report
//! rides on the worker's next lease extension, which it brings forward to
//! at most one per [`WorkerOptions::progress_interval`] (default 1 s); only
//! the latest report is sent. Out of bounds it is [`Error::InvalidArgument`]
//! at the call, and nothing is sent. A report the server refuses
//! ([`Error::WrongState`] while some cluster member does not keep progress
//! yet) is dropped, the lease extended without it, and the refusal passed
//! to [`WorkerOptions::on_error`] once per delivery. The server clears the
//! progress when the delivery ends.
//!
//! [`ProgressReporter::report`]: crate::ProgressReporter::report

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

use crate::client::{ReserveOptions, RetryDirective, SeppClient};
use crate::error::Error;
use crate::types::{Delivery, EnqueueRequest, JobContext, ProgressBox, ProgressReporter};

/// Any error a handler's work produced.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a handler failed, and so what the worker's nack asks for. `?` on any
/// error in a handler gives [`HandlerError::Retry`].
pub enum HandlerError {
    /// Try again on the queue's retry policy ([`RetryDirective::Default`]).
    Retry(BoxError),
    /// Try again, not before the delay ([`RetryDirective::After`]).
    RetryAfter(Duration, BoxError),
    /// Never again: dead-letter it now ([`RetryDirective::DeadLetter`]).
    Permanent(BoxError),
}

impl HandlerError {
    pub fn retry(err: impl Into<BoxError>) -> HandlerError {
        HandlerError::Retry(err.into())
    }

    pub fn retry_after(delay: Duration, err: impl Into<BoxError>) -> HandlerError {
        HandlerError::RetryAfter(delay, err.into())
    }

    pub fn permanent(err: impl Into<BoxError>) -> HandlerError {
        HandlerError::Permanent(err.into())
    }

    /// The nack directive this failure asks for.
    pub fn directive(&self) -> RetryDirective {
        match self {
            HandlerError::Retry(_) => RetryDirective::Default,
            HandlerError::RetryAfter(d, _) => RetryDirective::After(*d),
            HandlerError::Permanent(_) => RetryDirective::DeadLetter,
        }
    }

    fn cause(&self) -> &BoxError {
        match self {
            HandlerError::Retry(e) | HandlerError::RetryAfter(_, e) | HandlerError::Permanent(e) => e,
        }
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.cause(), f)
    }
}

impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Retry(e) => write!(f, "Retry({:?})", e),
            HandlerError::RetryAfter(d, e) => write!(f, "RetryAfter({:?}, {:?})", d, e),
            HandlerError::Permanent(e) => write!(f, "Permanent({:?})", e),
        }
    }
}

// HandlerError is deliberately not a std::error::Error itself, so that this
// blanket conversion (what `?` uses) does not overlap From<T> for T.
impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(err: E) -> Self {
        HandlerError::Retry(Box::new(err))
    }
}

/// What a handler's `Ok` gives the worker: the job's result, if any. `()`
/// and `None` ack without one; a non-empty `Vec<u8>` acks with it
/// ([`SeppClient::ack_with_result`]); an empty one acks without a result;
/// a [`Completion`] acks with its result and follow-ups.
pub trait JobResult {
    /// The result to ack with; `None` or empty: a plain ack.
    fn into_job_result(self) -> Option<Vec<u8>>;

    /// The result and the follow-ups to ack with: by default the result
    /// alone ([`JobResult::into_job_result`]), no follow-ups.
    fn into_completion(self) -> Completion
    where
        Self: Sized,
    {
        Completion { result: self.into_job_result().unwrap_or_default(), follow_ups: Vec::new() }
    }
}

/// A handler's `Ok` that completes its job with more than a result: the
/// result (empty: none) and follow-ups, jobs enqueued with the ack in the
/// same log entry ([`SeppClient::ack_with_follow_ups`]), all or nothing and
/// fenced by the lease: a handler whose lease was lost enqueues none.
/// Follow-ups the server refuses leave the job uncompleted: the refusal
/// reaches [`WorkerOptions::on_error`] and the job is nacked to run again
/// by its queue's retry policy, as the Go worker does. Give each follow-up
/// an idempotency key when a rerun must not enqueue it twice.
#[derive(Debug, Clone, Default)]
pub struct Completion {
    pub result: Vec<u8>,
    pub follow_ups: Vec<EnqueueRequest>,
}

impl Completion {
    /// A completion without a result whose follow-ups are follow_ups.
    pub fn follow_ups(follow_ups: Vec<EnqueueRequest>) -> Self {
        Completion { result: Vec::new(), follow_ups }
    }

    /// This completion with result.
    pub fn with_result(mut self, result: impl Into<Vec<u8>>) -> Self {
        self.result = result.into();
        self
    }
}

impl JobResult for Completion {
    fn into_job_result(self) -> Option<Vec<u8>> {
        Some(self.result)
    }

    fn into_completion(self) -> Completion {
        self
    }
}

impl JobResult for () {
    fn into_job_result(self) -> Option<Vec<u8>> {
        None
    }
}

impl JobResult for Vec<u8> {
    fn into_job_result(self) -> Option<Vec<u8>> {
        Some(self)
    }
}

impl JobResult for Option<Vec<u8>> {
    fn into_job_result(self) -> Option<Vec<u8>> {
        self
    }
}

/// A handler's run, as [`WorkerOptions::instrument`] receives and returns it.
/// Its `Ok(())` stands for the handler's `Ok` whatever its value: the
/// result, if any, reaches the worker by another way, so a hook never sees
/// nor drops it.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send>>;

/// A [`WorkerOptions::instrument`] hook.
pub type InstrumentHook = Arc<dyn Fn(&Delivery, HandlerFuture) -> HandlerFuture + Send + Sync>;
/// Where a handler's run leaves its result for the worker's ack.
type ResultSlot = Arc<Mutex<Option<Completion>>>;
type Handler = Arc<dyn Fn(Delivery, ResultSlot) -> HandlerFuture + Send + Sync>;
type ErrorHook = Arc<dyn Fn(&Error) + Send + Sync>;

/// How a worker reserves and runs. `Default`: 10 at once, 30 s leases,
/// 5 s long polls.
#[derive(Clone)]
pub struct WorkerOptions {
    /// Handlers running at once (at least 1).
    pub concurrency: usize,
    /// The lease each job is reserved with and extended to every
    /// `lease / 3` while its handler runs.
    pub lease: Duration,
    /// How long a reserve waits for a job. `stop` waits for a reserve in
    /// flight, so keep it below the grace you stop with.
    pub wait: Duration,
    /// Names the worker in listings and attempt history.
    pub worker_id: String,
    /// Sees every error of the worker's own calls (a reserve during a
    /// failover, an ack whose lease was lost, a handler's result the server
    /// refused: see the module's documentation). The worker carries on
    /// regardless; the default drops them.
    pub on_error: Option<ErrorHook>,
    /// Wraps each handler's run, with the delivery at hand: how a tracing
    /// library runs it inside a span whose parent is
    /// `delivery.job.trace_context` (with the `tracing` crate:
    /// `Box::pin(run.instrument(span))`). The hook must return a future
    /// that drives `run` to its end and yields its result.
    pub instrument: Option<InstrumentHook>,
    /// The least time between two lease extensions that a handler's
    /// progress report ([`Delivery::progress`]) brings forward (default
    /// 1 s).
    pub progress_interval: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            concurrency: 10,
            lease: Duration::from_secs(30),
            wait: Duration::from_secs(5),
            worker_id: String::new(),
            on_error: None,
            instrument: None,
            progress_interval: Duration::from_secs(1),
        }
    }
}

impl fmt::Debug for WorkerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerOptions")
            .field("concurrency", &self.concurrency)
            .field("lease", &self.lease)
            .field("wait", &self.wait)
            .field("worker_id", &self.worker_id)
            .field("progress_interval", &self.progress_interval)
            .finish()
    }
}

/// Runs handlers for the jobs of some queues.
///
/// While a handler runs, the worker extends its lease every `lease / 3`. A
/// lease the server reports lost, or one that lapses by the local clock
/// while extensions keep failing, ends the handler (its future is dropped)
/// and the worker answers nothing for that job: another worker may have it
/// now. A job of a type no handler takes is nacked with the default
/// directive.
pub struct Worker {
    client: SeppClient,
    opts: WorkerOptions,
    /// (queue, job type) → handler; job type "" takes the queue's others.
    handlers: HashMap<(String, String), Handler>,
}

impl Worker {
    pub fn new(client: SeppClient, opts: WorkerOptions) -> Worker {
        Worker {
            client,
            opts,
            handlers: HashMap::new(),
        }
    }

    /// Registers handler for job_type on queue (`""`: every type of the
    /// queue without a handler of its own). The handler's `Ok` value is the
    /// job's result ([`JobResult`]): `Ok(())` acks plainly, `Ok(bytes)`
    /// acks with the result, kept where the queue keeps completed jobs.
    pub fn handle<F, Fut, R>(&mut self, queue: &str, job_type: &str, handler: F) -> &mut Self
    where
        F: Fn(Delivery) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
        R: JobResult + 'static,
    {
        let h: Handler = Arc::new(move |d, slot: ResultSlot| {
            let run = handler(d);
            Box::pin(async move {
                let result = run.await?.into_completion();
                if let Ok(mut s) = slot.lock() {
                    *s = Some(result);
                }
                Ok(())
            })
        });
        self.handlers.insert((queue.to_string(), job_type.to_string()), h);
        self
    }

    /// Starts reserving on every queue with a handler; the returned handle
    /// stops it. Must run inside a tokio runtime. An error when no handler
    /// is registered.
    pub fn start(self) -> Result<RunningWorker, Error> {
        if self.handlers.is_empty() {
            return Err(Error::invalid("worker", "handlers", "", "no handler registered; call handle before start"));
        }
        let mut queues: Vec<String> = self.handlers.keys().map(|(q, _)| q.clone()).collect();
        queues.sort();
        queues.dedup();
        let concurrency = self.opts.concurrency.max(1);
        let shared = Arc::new(Shared {
            client: self.client,
            opts: self.opts,
            handlers: self.handlers,
            slots: Arc::new(Semaphore::new(concurrency)),
        });
        let (stopping_tx, stopping) = watch::channel(false);
        let (abort_tx, aborting) = watch::channel(false);
        let loops = queues
            .into_iter()
            .map(|q| tokio::spawn(reserve_loop(shared.clone(), q, stopping.clone(), aborting.clone())))
            .collect();
        Ok(RunningWorker {
            shared,
            concurrency,
            stopping: stopping_tx,
            abort: abort_tx,
            loops,
        })
    }
}

struct Shared {
    client: SeppClient,
    opts: WorkerOptions,
    handlers: HashMap<(String, String), Handler>,
    /// One permit per handler that may run; a job holds one from its
    /// reserve to its answer.
    slots: Arc<Semaphore>,
}

impl Shared {
    fn report(&self, err: &Error) {
        if let Some(hook) = &self.opts.on_error {
            hook(err);
        }
    }

    fn handler_for(&self, d: &Delivery) -> Option<Handler> {
        self.handlers
            .get(&(d.ctx.queue.clone(), d.job.job_type.clone()))
            .or_else(|| self.handlers.get(&(d.ctx.queue.clone(), String::new())))
            .cloned()
    }
}

/// A started [`Worker`].
pub struct RunningWorker {
    shared: Arc<Shared>,
    concurrency: usize,
    stopping: watch::Sender<bool>,
    abort: watch::Sender<bool>,
    loops: Vec<JoinHandle<()>>,
}

impl RunningWorker {
    /// Stops reserving, waits for reserves in flight (their jobs are
    /// released, no attempt burned) and for running handlers to finish and
    /// be answered. If grace runs out first, the handlers still running
    /// are dropped and their jobs released; then it returns false.
    pub async fn stop(self, grace: Duration) -> bool {
        let _ = self.stopping.send(true);
        let deadline = tokio::time::Instant::now() + grace;
        let all = self.concurrency as u32;
        let drained = tokio::time::timeout_at(deadline, async {
            for l in self.loops {
                let _ = l.await;
            }
            self.shared.slots.acquire_many(all).await.map(drop)
        })
        .await;
        if matches!(drained, Ok(Ok(()))) {
            return true;
        }
        let _ = self.abort.send(true);
        // The dropped handlers' releases are quick calls; bound them by the
        // client's own retry budget.
        let _ = tokio::time::timeout(Duration::from_secs(30), self.shared.slots.acquire_many(all)).await;
        false
    }
}

async fn wait_true(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow() {
            return;
        }
        if rx.changed().await.is_err() {
            // The sender is gone: the flag can never turn true.
            std::future::pending::<()>().await;
        }
    }
}

async fn reserve_loop(shared: Arc<Shared>, queue: String, mut stopping: watch::Receiver<bool>, aborting: watch::Receiver<bool>) {
    let mut failures: u32 = 0;
    loop {
        if *stopping.borrow() {
            return;
        }
        // One free slot at least, then as many more as are free now.
        let first = tokio::select! {
            p = shared.slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
            _ = wait_true(&mut stopping) => return,
        };
        let mut permits = vec![first];
        while let Ok(p) = shared.slots.clone().try_acquire_owned() {
            permits.push(p);
        }
        let opts = ReserveOptions {
            worker_id: shared.opts.worker_id.clone(),
            max: permits.len() as u32,
            lease: Some(shared.opts.lease),
            wait: shared.opts.wait,
        };
        // A reserve is not abandoned on stop: its answer may hold leased
        // jobs, which are released below rather than left to expire.
        let deliveries = match shared.client.reserve(&queue, opts).await {
            Ok(d) => {
                failures = 0;
                d
            }
            Err(e) => {
                shared.report(&e);
                drop(permits);
                failures = failures.saturating_add(1);
                let pause = Duration::from_millis(50 * u64::from(failures.min(20)));
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = wait_true(&mut stopping) => return,
                }
                continue;
            }
        };
        let stop_now = *stopping.borrow();
        for d in deliveries {
            let permit = permits.pop().expect("a reserve returns at most max deliveries");
            if stop_now {
                if let Err(e) = shared.client.release(&d.ctx).await {
                    shared.report(&e);
                }
                drop(permit);
                continue;
            }
            let shared = shared.clone();
            let aborting = aborting.clone();
            tokio::spawn(async move {
                run_one(&shared, d, aborting).await;
                drop(permit);
            });
        }
    }
}

enum Outcome {
    Done(Result<(), HandlerError>),
    LeaseLost,
    Aborted,
}

async fn run_one(shared: &Arc<Shared>, mut d: Delivery, mut aborting: watch::Receiver<bool>) {
    let ctx = d.ctx.clone();
    let handler = match shared.handler_for(&d) {
        Some(h) => h,
        None => {
            let reason = format!("no handler registered for job type {:?} on queue {:?}", d.job.job_type, ctx.queue);
            if let Err(e) = shared.client.nack(&ctx, RetryDirective::Default, reason).await {
                shared.report(&e);
            }
            return;
        }
    };
    let (lost_tx, mut lost) = watch::channel(false);
    let progress = Arc::new(ProgressBox::default());
    d.progress = ProgressReporter::attached(progress.clone());
    let heartbeat = tokio::spawn(keep_lease(shared.clone(), ctx.clone(), lost_tx, progress));
    let slot = ResultSlot::default();
    let run = match &shared.opts.instrument {
        Some(wrap) => {
            let seen = d.clone();
            wrap(&seen, handler(d, slot.clone()))
        }
        None => handler(d, slot.clone()),
    };
    let outcome = tokio::select! {
        r = run => Outcome::Done(r),
        _ = wait_true(&mut lost) => Outcome::LeaseLost,
        _ = wait_true(&mut aborting) => Outcome::Aborted,
    };
    heartbeat.abort();
    let result = take_result(&slot);
    let answered = match outcome {
        Outcome::Done(Ok(())) => match result {
            Some(c) if !c.follow_ups.is_empty() => ack_with_follow_ups(shared, &ctx, c).await,
            Some(c) if !c.result.is_empty() => ack_with_result(shared, &ctx, c.result).await,
            _ => shared.client.ack(&ctx).await,
        },
        Outcome::Done(Err(he)) => shared.client.nack(&ctx, he.directive(), he.to_string()).await.map(drop),
        Outcome::LeaseLost => Ok(()),
        Outcome::Aborted => shared.client.release(&ctx).await,
    };
    if let Err(e) = answered {
        shared.report(&e);
    }
}

/// The result a handler's run left, if any (the guard dropped here, not
/// held across the ack's await).
fn take_result(slot: &ResultSlot) -> Option<Completion> {
    match slot.lock() {
        Ok(mut s) => s.take(),
        Err(_) => None,
    }
}

/// Acks ctx with its handler's result. A refusal ([`Error::WrongState`]:
/// the queue keeps no completed jobs, or the cluster is not upgraded) left
/// the lease held: the job ran, so it is acked without the result rather
/// than run again, and the refusal is reported, as the Go worker does. Any
/// other failure is returned (and so reported) as it came; the job then
/// comes back when its lease expires.
async fn ack_with_result(shared: &Shared, ctx: &JobContext, result: Vec<u8>) -> Result<(), Error> {
    match shared.client.ack_with_result(ctx, result).await {
        Err(e @ Error::WrongState { .. }) => {
            shared.report(&e);
            shared.client.ack(ctx).await
        }
        other => other,
    }
}

/// Acks ctx with its handler's result and follow-ups in one call. A result
/// the queue does not keep ([`Error::WrongState`]) is reported and the
/// follow-ups sent without it. Follow-ups the server refuses left the lease
/// held and nothing applied: the job is not done without them, so the
/// refusal is reported and the job nacked to run again. A lost lease or an
/// unknown outcome is returned (and so reported) as it came.
async fn ack_with_follow_ups(shared: &Shared, ctx: &JobContext, c: Completion) -> Result<(), Error> {
    let mut answer = shared.client.ack_with_follow_ups(ctx, c.follow_ups.clone(), c.result.clone()).await;
    if let Err(e @ Error::WrongState { .. }) = &answer {
        if !c.result.is_empty() {
            shared.report(e);
            answer = shared.client.ack_with_follow_ups(ctx, c.follow_ups, Vec::new()).await;
        }
    }
    match answer {
        Ok(_) => Ok(()),
        Err(e @ (Error::LeaseLost { .. } | Error::JobCancelled { .. } | Error::UnknownOutcome { .. } | Error::Unavailable { .. })) => Err(e),
        Err(e) => {
            shared.report(&e);
            shared.client.nack(ctx, RetryDirective::Default, format!("follow-ups refused: {}", e)).await.map(drop)
        }
    }
}

/// Extends ctx's lease once, with the handler's pending progress report if
/// it has one. A report the server refuses ([`Error::WrongState`]: it
/// keeps no progress yet; [`Error::InvalidArgument`]: out of its bounds)
/// is dropped, the refusal reported once per delivery, and the lease
/// extended without it; a report whose extension failed otherwise is kept
/// for the next one unless a newer one came.
async fn extend(shared: &Shared, ctx: &JobContext, progress: &ProgressBox) -> Result<(), Error> {
    let lease = shared.opts.lease;
    let p = match progress.take() {
        None => return shared.client.extend_lease(ctx, lease).await.map(drop),
        Some(p) => p,
    };
    match shared.client.report_progress(ctx, p.percent, &p.message, lease).await {
        Ok(_) => Ok(()),
        Err(e @ Error::WrongState { .. }) | Err(e @ Error::InvalidArgument { .. }) => {
            let first = match progress.state.lock() {
                Ok(mut s) => !std::mem::replace(&mut s.refused, true),
                Err(_) => false,
            };
            if first {
                shared.report(&e);
            }
            shared.client.extend_lease(ctx, lease).await.map(drop)
        }
        Err(e) => {
            if let Ok(mut s) = progress.state.lock() {
                if s.pending.is_none() {
                    s.pending = Some(p);
                }
            }
            Err(e)
        }
    }
}

/// Extends ctx's lease every lease/3 until aborted, carrying the handler's
/// latest progress report when there is one; a report brings the next
/// extension forward, to no sooner than `progress_interval` after the
/// last. Flags lost when the server says the lease is gone, or when by the
/// local clock it lapsed while extensions failed. The error reported says
/// which: an operator's cancel is [`Error::JobCancelled`], not
/// [`Error::LeaseLost`].
async fn keep_lease(shared: Arc<Shared>, ctx: JobContext, lost: watch::Sender<bool>, progress: Arc<ProgressBox>) {
    let lease = shared.opts.lease;
    let every = (lease / 3).max(Duration::from_millis(10));
    let interval = shared.opts.progress_interval;
    let mut held_until = Instant::now() + lease;
    let mut last = Instant::now(); // of the last extension (the reserve, at first)
    loop {
        let mut next = last + every;
        let pending = progress.state.lock().map(|s| s.pending.is_some()).unwrap_or(false);
        if pending {
            next = next.min(last + interval);
        }
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(next.into()) => break,
                _ = progress.wake.notified() => {
                    if progress.state.lock().map(|s| s.pending.is_some()).unwrap_or(false) {
                        next = next.min(last + interval);
                    }
                }
            }
        }
        let asked = Instant::now();
        let res = extend(&shared, &ctx, &progress).await;
        last = Instant::now();
        match res {
            Ok(_) => held_until = asked + lease,
            Err(e @ Error::LeaseLost { .. }) | Err(e @ Error::JobCancelled { .. }) | Err(e @ Error::NotFound { .. }) => {
                shared.report(&e);
                let _ = lost.send(true);
                return;
            }
            Err(e) => {
                shared.report(&e);
                if Instant::now() >= held_until {
                    let _ = lost.send(true);
                    return;
                }
            }
        }
    }
}
