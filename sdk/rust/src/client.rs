//! [`SeppClient`]: every call of the queue API, sent to the leader, followed
//! through failovers, and retried only where a retry cannot apply anything
//! twice.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use prost::Message;

use crate::error::{from_status, Detail, Error};
use crate::pb;
use crate::schedule::{Schedule, ScheduleDefinition};
use crate::transport::{AttemptError, Transport};
use crate::types::{check_progress, duration, system_time, DeadLetterRecord, Delivery, EnqueueRequest, EnqueueResult, Job, JobContext, JobOutcome, JobState, ServerInfo, TraceContext};
/// The wait each WaitJob call of `wait_job` asks for: the server's
/// default, below its 60 s cap.
const WAIT_JOB_POLL: Duration = Duration::from_secs(30);


/// What happens to a nacked job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryDirective {
    /// Another attempt while attempts remain, timed by the queue's retry
    /// policy.
    Default,
    /// Another attempt once the delay has passed (Scheduled until then),
    /// overriding the queue's policy; capped at the schedule horizon.
    After(Duration),
    /// Dead-letter it now, skipping any remaining attempts.
    DeadLetter,
}

/// How a client connects and retries. `Default` gives the values below.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Sent as `Authorization: Bearer <token>` when the server has `[auth]`.
    pub token: Option<String>,
    /// How long one call keeps retrying through a failover (15 s); zero
    /// makes every call a single attempt.
    pub retry_timeout: Duration,
    /// Bounds one attempt (10 s); a long-poll reserve gets its wait on top.
    pub attempt_timeout: Duration,
    /// Jittered exponential backoff between retries: first and largest
    /// wait (5 ms, 100 ms).
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Called for each job enqueued without a trace context of its own;
    /// what it returns (the caller's current trace context, from a tracing
    /// library) rides with the job. `None`: no tracing.
    pub trace_injector: Option<TraceInjector>,
}

/// A [`ClientOptions::trace_injector`]: the caller's current W3C trace
/// context, if any.
#[derive(Clone)]
pub struct TraceInjector(pub Arc<dyn Fn() -> Option<TraceContext> + Send + Sync>);

impl std::fmt::Debug for TraceInjector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceInjector")
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            token: None,
            retry_timeout: Duration::from_secs(15),
            attempt_timeout: Duration::from_secs(10),
            backoff_base: Duration::from_millis(5),
            backoff_max: Duration::from_millis(100),
            trace_injector: None,
        }
    }
}

/// How reserve leases jobs. `Default`: one job, the queue's default lease,
/// no wait.
#[derive(Clone, Debug, Default)]
pub struct ReserveOptions {
    /// Names the worker in listings and attempt history.
    pub worker_id: String,
    /// At most this many jobs (0 means 1); the server clamps it to its
    /// max_reserve_batch.
    pub max: u32,
    /// The lease; `None` takes the queue's default_lease_ms.
    pub lease: Option<Duration>,
    /// How long to wait for a job when none is ready (a long poll).
    pub wait: Duration,
}

/// How a failed call may be retried.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Idempotent (a key, a request id) or fenced (a lease token): retry
    /// anything that did not fail for good.
    Safe,
    /// Destructive and unfenced (a drain): retry only what certainly was
    /// not applied.
    NotSent,
}

/// How one failed attempt bears on a retry.
enum Failure {
    /// The server refused it for good.
    Final(Error),
    /// Certainly not applied (a refused connection, NotLeader); the hint is
    /// the leader a follower named.
    NotApplied(Error, Option<String>),
    /// Maybe applied (no answer, or Unavailable without NotLeader).
    MaybeApplied(Error),
}

struct Nodes {
    /// Base URLs of every node known, seeds first.
    known: Vec<String>,
    leader: Option<String>,
    rotation: usize,
    rng: u64,
}

struct Inner {
    transport: Transport,
    opts: ClientOptions,
    nodes: Mutex<Nodes>,
}

/// A client of a sepp cluster. Cheap to clone: clones share connections and
/// what they know of the leader.
///
/// Calls go to the node the client takes for the leader. A follower's
/// NotLeader answer (or its forwarding header) moves the next calls to the
/// leader it names; a node that refuses connections is skipped. Retries
/// never apply a call twice: an enqueue carries one idempotency key over
/// all of them, a reserve one request id, ack/nack/release/extend_lease are
/// fenced by the lease token, and a drain is retried only when the server
/// said nothing was applied.
#[derive(Clone)]
pub struct SeppClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SeppClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes = self.inner.nodes.lock().expect("nodes lock");
        f.debug_struct("SeppClient").field("known", &nodes.known).field("leader", &nodes.leader).finish()
    }
}

/// `http://host:port` from a URL or host:port; an error for anything else
/// (https needs TLS, which this client does not speak).
fn normalize_addr(addr: &str) -> Result<String, Error> {
    let a = addr.trim().trim_end_matches('/');
    if a.starts_with("https://") {
        return Err(Error::invalid("connect", "addrs", "http://", &format!("{}: TLS is not supported by this client; use http://", a)));
    }
    let host = a.strip_prefix("http://").unwrap_or(a);
    if host.is_empty() || host.contains('/') || !host.contains(':') {
        return Err(Error::invalid("connect", "addrs", "host:port", &format!("{:?}: want http://host:port or host:port", addr)));
    }
    Ok(format!("http://{}", host))
}

fn new_rng_seed() -> u64 {
    let mut b = [0u8; 8];
    if getrandom::getrandom(&mut b).is_err() {
        // Only jitter depends on it; the time is seed enough then.
        let t = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        return t.as_nanos() as u64 | 1;
    }
    u64::from_le_bytes(b) | 1
}

/// A fresh idempotency key or request id: 128 random bits in hex.
pub(crate) fn new_key() -> Result<String, Error> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).map_err(|e| Error::internal("enqueue", format!("no randomness for an idempotency key: {}", e)))?;
    Ok(b.iter().map(|x| format!("{:02x}", x)).collect())
}

impl SeppClient {
    /// A client for the cluster whose nodes answer at addrs: one URL
    /// (`"http://localhost:50051"`) or several separated by commas
    /// (`"n1:50051,n2:50051"`; host:port means http). It asks the nodes in
    /// turn who leads, and fails with [`Error::Unavailable`] when none
    /// answers within the retry budget.
    pub async fn connect(addrs: &str) -> Result<SeppClient, Error> {
        SeppClient::connect_with(&addrs.split(',').collect::<Vec<_>>(), ClientOptions::default()).await
    }

    /// [`connect`](Self::connect) with a list of addresses and options.
    pub async fn connect_with(addrs: &[&str], opts: ClientOptions) -> Result<SeppClient, Error> {
        let mut known: Vec<String> = Vec::new();
        for a in addrs.iter().filter(|a| !a.trim().is_empty()) {
            let n = normalize_addr(a)?;
            if !known.contains(&n) {
                known.push(n);
            }
        }
        if known.is_empty() {
            return Err(Error::invalid("connect", "addrs", "", "at least one node address is required"));
        }
        let transport = Transport::new(opts.token.as_deref()).map_err(|e| Error::invalid("connect", "token", "", &e))?;
        let client = SeppClient {
            inner: Arc::new(Inner {
                transport,
                opts,
                nodes: Mutex::new(Nodes {
                    known,
                    leader: None,
                    rotation: 0,
                    rng: new_rng_seed(),
                }),
            }),
        };
        let info = client.server_info_with("connect", true).await?;
        client.follow_leader(&info.leader_addr);
        Ok(client)
    }

    /// The nodes' base URLs the client knows.
    pub fn addrs(&self) -> Vec<String> {
        self.inner.nodes.lock().expect("nodes lock").known.clone()
    }

    /// The base URL of the node the client takes for the leader, if any.
    pub fn leader_addr(&self) -> Option<String> {
        self.inner.nodes.lock().expect("nodes lock").leader.clone()
    }

    fn follow_leader(&self, addr: &str) {
        if addr.is_empty() {
            return;
        }
        let url = match normalize_addr(addr) {
            Ok(u) => u,
            Err(_) => return,
        };
        let mut n = self.inner.nodes.lock().expect("nodes lock");
        if !n.known.contains(&url) {
            n.known.push(url.clone());
        }
        n.leader = Some(url);
    }

    fn forget(&self, base: &str) {
        let mut n = self.inner.nodes.lock().expect("nodes lock");
        if n.leader.as_deref() == Some(base) {
            n.leader = None;
        }
        if let Some(i) = n.known.iter().position(|k| k == base) {
            n.rotation = i + 1;
        }
    }

    fn target(&self) -> String {
        let mut n = self.inner.nodes.lock().expect("nodes lock");
        if let Some(l) = &n.leader {
            return l.clone();
        }
        let base = n.known[n.rotation % n.known.len()].clone();
        n.rotation += 1;
        base
    }

    /// The n-th backoff: base doubled n times up to max, less up to half
    /// of it as jitter.
    fn backoff(&self, n: u32) -> Duration {
        let o = &self.inner.opts;
        let mut d = o.backoff_base;
        for _ in 0..n {
            if d >= o.backoff_max {
                break;
            }
            d *= 2;
        }
        let d = d.min(o.backoff_max);
        let mut nodes = self.inner.nodes.lock().expect("nodes lock");
        // xorshift64: jitter needs no more.
        let mut x = nodes.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        nodes.rng = x;
        let half = d / 2;
        half + Duration::from_nanos(x % (half.as_nanos() as u64 + 1))
    }

    async fn attempt(&self, base: &str, op: &'static str, path: &str, body: Vec<u8>, extra: Duration) -> Result<bytes::Bytes, Failure> {
        let timeout = self.inner.opts.attempt_timeout + extra;
        match self.inner.transport.unary(base, path, body, timeout).await {
            Ok(answer) => {
                match answer.leader_hint {
                    Some(h) if normalize_addr(&h).ok().as_deref() != Some(base) => self.follow_leader(&h),
                    _ => self.inner.nodes.lock().expect("nodes lock").leader = Some(base.to_string()),
                }
                Ok(answer.body)
            }
            Err(AttemptError::NotSent(m)) => Err(Failure::NotApplied(unavailable(op, m), None)),
            Err(AttemptError::Lost(m)) => Err(Failure::MaybeApplied(unavailable(op, m))),
            Err(AttemptError::Status { code, message, details }) => {
                let hint = details.iter().find_map(|d| match d {
                    Detail::NotLeader(n) => Some(n.leader_grpc_addr.clone()),
                    _ => None,
                });
                let err = from_status(op, code, message, &details);
                if let Some(h) = hint {
                    return Err(Failure::NotApplied(err, Some(h).filter(|h| !h.is_empty())));
                }
                match code {
                    // Unavailable without NotLeader: "no leader" or a
                    // transport failure, which look the same and may come
                    // after the send.
                    crate::error::Code::Unavailable | crate::error::Code::Aborted | crate::error::Code::DeadlineExceeded => Err(Failure::MaybeApplied(err)),
                    _ => Err(Failure::Final(err)),
                }
            }
        }
    }

    /// Runs one call against the leader, retrying per policy with jittered
    /// exponential backoff until it succeeds, fails for good, or the retry
    /// budget runs out. Returns the answer and whether an earlier attempt
    /// may have applied.
    pub(crate) async fn call<Req: Message, Resp: Message + Default>(&self, op: &'static str, path: &str, req: &Req, policy: Policy, extra: Duration) -> Result<(Resp, bool), Error> {
        let body = req.encode_to_vec();
        let start = Instant::now();
        let budget = self.inner.opts.retry_timeout;
        let mut maybe_applied = false;
        let mut backoff_n = 0;
        let mut redirects = 0;
        loop {
            let base = self.target();
            let failure = match self.attempt(&base, op, path, body.clone(), extra).await {
                Ok(bytes) => {
                    let resp = Resp::decode(bytes).map_err(|e| Error::internal(op, format!("the answer does not decode: {}", e)))?;
                    return Ok((resp, maybe_applied));
                }
                Err(f) => f,
            };
            let (err, hint) = match failure {
                Failure::Final(err) => {
                    if maybe_applied && matches!(err, Error::LeaseLost { .. }) {
                        // A fenced retry that finds the lease gone: the
                        // first attempt may have taken effect, or the lease
                        // expired meanwhile.
                        return Err(Error::unknown_outcome(op, "a retry found the lease gone after an attempt that may have applied", err));
                    }
                    return Err(err);
                }
                Failure::MaybeApplied(err) => {
                    if policy == Policy::NotSent {
                        return Err(Error::unknown_outcome(op, "not retried, it may have applied", err));
                    }
                    maybe_applied = true;
                    (err, None)
                }
                Failure::NotApplied(err, hint) => (err, hint),
            };
            let elapsed = start.elapsed();
            if budget.is_zero() || elapsed >= budget {
                if maybe_applied {
                    return Err(Error::unknown_outcome(op, "retry budget spent", err));
                }
                return Err(err);
            }
            let hint_url = hint.as_deref().and_then(|h| normalize_addr(h).ok());
            if let Some(h) = &hint_url {
                if *h != base && redirects < 3 {
                    // A fresh hint: follow it at once.
                    self.follow_leader(h);
                    redirects += 1;
                    continue;
                }
            }
            redirects = 0;
            match &hint_url {
                Some(h) => self.follow_leader(h),
                None => self.forget(&base),
            }
            let wait = self.backoff(backoff_n).min(budget - elapsed);
            backoff_n += 1;
            tokio::time::sleep(wait).await;
        }
    }

    // ---- producing ----

    /// m with the trace injector's trace context, unless m has one.
    fn with_trace(&self, mut m: pb::EnqueueRequest) -> pb::EnqueueRequest {
        if m.trace_context.is_none() {
            if let Some(inject) = &self.inner.opts.trace_injector {
                m.trace_context = (inject.0)().filter(|tc| !tc.traceparent.is_empty()).map(|tc| tc.to_wire());
            }
        }
        m
    }

    /// Adds one job. The same idempotency key (the request's, or one the
    /// client makes) rides on every retry, so a retry through a failover
    /// never adds a second job.
    pub async fn enqueue(&self, request: EnqueueRequest) -> Result<EnqueueResult, Error> {
        request.validate("enqueue", "")?;
        let key = match &request.idempotency_key {
            Some(k) => k.clone(),
            None => new_key()?,
        };
        let (resp, retried): (pb::EnqueueResponse, bool) = self.call("enqueue", "sepp.v1.QueueService/Enqueue", &self.with_trace(request.to_wire(&key)), Policy::Safe, Duration::ZERO).await?;
        Ok(EnqueueResult {
            job_id: resp.job_id,
            state: JobState::from_wire(resp.state),
            // A duplicate after a retry is this call's own first attempt.
            duplicate: resp.duplicate && !retried,
            idempotency_key: key,
        })
    }

    /// Adds several jobs in one call; each succeeds or fails on its own and
    /// the results come back in order. Every job has its own idempotency
    /// key, so a retried batch adds none twice. The outer error is a
    /// failure of the call as a whole.
    ///
    /// A batch whose jobs wait for each other
    /// ([`EnqueueRequest::with_after`]) is a workflow, applied whole: every
    /// item succeeds, or the call fails ([`Error::InvalidArgument`] naming
    /// the item's field, `jobs[i].after[k]`, ...) and nothing is added.
    pub async fn enqueue_batch(&self, requests: Vec<EnqueueRequest>) -> Result<Vec<Result<EnqueueResult, Error>>, Error> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        // Jobs that name each other by index go whole or not at all: an
        // item dropped here would shift the indexes of the rest.
        let whole = requests.iter().any(|r| !r.after.is_empty());
        // Items the client refuses never go out; each gets its own error,
        // naming it (jobs[i].field), in its place.
        let mut out: Vec<Option<Result<EnqueueResult, Error>>> = Vec::with_capacity(requests.len());
        let mut keys = Vec::with_capacity(requests.len());
        let mut jobs = Vec::with_capacity(requests.len());
        for (i, r) in requests.iter().enumerate() {
            if let Err(e) = r.validate("enqueue batch", &format!("jobs[{}]", i)) {
                if whole {
                    return Err(e);
                }
                out.push(Some(Err(e)));
                continue;
            }
            let key = match &r.idempotency_key {
                Some(k) => k.clone(),
                None => new_key()?,
            };
            jobs.push(self.with_trace(r.to_wire(&key)));
            keys.push(key);
            out.push(None);
        }
        if jobs.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        let (resp, retried): (pb::EnqueueBatchResponse, bool) = self.call("enqueue batch", "sepp.v1.QueueService/EnqueueBatch", &pb::EnqueueBatchRequest { jobs }, Policy::Safe, Duration::ZERO).await?;
        if resp.results.len() != keys.len() {
            return Err(Error::internal("enqueue batch", format!("the server answered {} results for {} jobs", resp.results.len(), keys.len())));
        }
        let mut sent = resp.results.into_iter().zip(keys).map(|(r, key)| match r.outcome {
            Some(pb::enqueue_batch_result::Outcome::Enqueued(e)) => Ok(EnqueueResult {
                job_id: e.job_id,
                state: JobState::from_wire(e.state),
                duplicate: e.duplicate && !retried,
                idempotency_key: key,
            }),
            Some(pb::enqueue_batch_result::Outcome::Error(e)) => Err(item_error("enqueue", e)),
            None => Err(Error::internal("enqueue", "the server answered an empty batch result")),
        });
        Ok(out
            .into_iter()
            .map(|slot| match slot {
                Some(refused) => refused,
                None => sent.next().unwrap_or_else(|| Err(Error::internal("enqueue", "a batch result went missing"))),
            })
            .collect())
    }

    // ---- consuming ----

    /// Leases up to `opts.max` Ready jobs of queue, highest priority first,
    /// FIFO within a priority; none when nothing was ready within the
    /// wait. One request id rides on every retry, so a retry returns the
    /// first attempt's deliveries instead of leasing more.
    pub async fn reserve(&self, queue: &str, opts: ReserveOptions) -> Result<Vec<Delivery>, Error> {
        if queue.is_empty() {
            return Err(Error::invalid("reserve", "queue", "", "must not be empty"));
        }
        let req = pb::ReserveRequest {
            queue: queue.to_string(),
            worker_id: opts.worker_id,
            max: opts.max.max(1),
            lease: opts.lease.map(duration),
            wait: if opts.wait.is_zero() { None } else { Some(duration(opts.wait)) },
            request_id: new_key()?,
        };
        let (resp, _): (pb::ReserveResponse, bool) = self.call("reserve", "sepp.v1.QueueService/Reserve", &req, Policy::Safe, opts.wait).await?;
        resp.jobs
            .into_iter()
            .map(|rj| match (rj.ctx, rj.job) {
                (Some(ctx), Some(job)) => Ok(Delivery::new(JobContext::from_wire(ctx), Job::from_wire(job))),
                _ => Err(Error::internal("reserve", "the server answered a delivery without its ctx or job")),
            })
            .collect()
    }

    /// Waits until the job completed or died and returns its outcome (bound
    /// it with a timeout around the future). It long-polls the leader,
    /// asking again each time a poll runs out; through a leader change it
    /// retries on the new leader, which answers the same (the outcome is
    /// replicated state). [`Error::NotFound`] when the server holds no such
    /// job: never enqueued, or gone without a record kept (completed and
    /// dead-letter retention).
    pub async fn wait_job(&self, job_id: u64) -> Result<JobOutcome, Error> {
        loop {
            let out = self.poll_job(job_id, WAIT_JOB_POLL).await?;
            if out.terminal {
                return Ok(out);
            }
        }
    }

    /// One WaitJob call of at most `timeout` (the server caps it at 60 s):
    /// `terminal` is false when the job was still running at its end.
    pub async fn poll_job(&self, job_id: u64, timeout: Duration) -> Result<JobOutcome, Error> {
        let req = pb::WaitJobRequest { job_id, timeout_ms: (timeout.as_millis().min(i64::MAX as u128) as i64).max(1) };
        let (resp, _): (pb::WaitJobResponse, bool) = self.call("wait job", "sepp.v1.QueueService/WaitJob", &req, Policy::Safe, timeout).await?;
        Ok(JobOutcome::from_wire(resp))
    }

    /// Enqueues `request`, then waits for the new job's outcome.
    pub async fn enqueue_and_wait(&self, request: EnqueueRequest) -> Result<(EnqueueResult, JobOutcome), Error> {
        let res = self.enqueue(request).await?;
        let out = self.wait_job(res.job_id).await?;
        Ok((res, out))
    }

    /// Completes a delivery: the job leaves the server. [`Error::LeaseLost`]
    /// when the lease was no longer this delivery's.
    pub async fn ack(&self, ctx: &JobContext) -> Result<(), Error> {
        let _: (pb::AckResponse, bool) = self.call("ack", "sepp.v1.QueueService/Ack", &pb::AckRequest { ctx: Some(ctx.to_wire()), result: Vec::new(), follow_ups: Vec::new() }, Policy::Safe, Duration::ZERO).await?;
        Ok(())
    }

    /// Completes a delivery with a result, kept with the completed job for
    /// its queue's `completed_retention_ms`: [`SeppClient::wait_job`] and
    /// [`SeppClient::get_job`] return it. At most the server's
    /// `max_result_bytes` ([`Error::InvalidArgument`] over it). A queue that
    /// keeps no completed jobs, or a cluster not yet upgraded, answers
    /// [`Error::WrongState`] and the lease still holds: ack without it.
    pub async fn ack_with_result(&self, ctx: &JobContext, result: impl Into<Vec<u8>>) -> Result<(), Error> {
        let req = pb::AckRequest { ctx: Some(ctx.to_wire()), result: result.into(), follow_ups: Vec::new() };
        let _: (pb::AckResponse, bool) = self.call("ack", "sepp.v1.QueueService/Ack", &req, Policy::Safe, Duration::ZERO).await?;
        Ok(())
    }

    /// Completes a delivery and enqueues `follow_ups` in the same log entry,
    /// all or nothing; returns their results in order, as
    /// [`SeppClient::enqueue`]'s (`duplicate` when a job already holds the
    /// idempotency or unique key). `result`, when not empty, is kept as
    /// [`SeppClient::ack_with_result`] keeps it.
    ///
    /// Fenced by the lease: a lost lease is [`Error::LeaseLost`] and no
    /// follow-up exists. A follow-up the server refuses
    /// ([`Error::InvalidArgument`] naming `follow_ups[i]`, a full queue or
    /// budget, a refusing unique key) fails the call and nothing is applied,
    /// the lease still held; a cluster not yet upgraded refuses follow-ups
    /// with [`Error::WrongState`]. Each follow-up gets an idempotency key
    /// unless it has one, so a retry cannot enqueue it twice; a retry that
    /// finds the lease gone because the first attempt applied is
    /// [`Error::UnknownOutcome`], as for an ack. At most the server's
    /// `max_batch_size` follow-ups. Follow-ups may wait for earlier ones
    /// of the same call ([`EnqueueRequest::with_after`]).
    pub async fn ack_with_follow_ups(&self, ctx: &JobContext, follow_ups: Vec<EnqueueRequest>, result: impl Into<Vec<u8>>) -> Result<Vec<EnqueueResult>, Error> {
        let mut keys = Vec::with_capacity(follow_ups.len());
        let mut wire = Vec::with_capacity(follow_ups.len());
        for (i, r) in follow_ups.iter().enumerate() {
            r.validate("ack", &format!("follow_ups[{}]", i))?;
            let key = match &r.idempotency_key {
                Some(k) => k.clone(),
                None => new_key()?,
            };
            wire.push(self.with_trace(r.to_wire(&key)));
            keys.push(key);
        }
        let req = pb::AckRequest { ctx: Some(ctx.to_wire()), result: result.into(), follow_ups: wire };
        let (resp, retried): (pb::AckResponse, bool) = self.call("ack", "sepp.v1.QueueService/Ack", &req, Policy::Safe, Duration::ZERO).await?;
        if resp.follow_ups.len() != keys.len() {
            return Err(Error::internal("ack", format!("the server answered {} follow-up results for {} follow-ups (a server older than follow-ups ignores them)", resp.follow_ups.len(), keys.len())));
        }
        Ok(resp
            .follow_ups
            .into_iter()
            .zip(keys)
            .map(|(r, key)| EnqueueResult {
                job_id: r.job_id,
                state: JobState::from_wire(r.state),
                // A duplicate after a retry is this call's own first attempt.
                duplicate: r.duplicate && !retried,
                idempotency_key: key,
            })
            .collect())
    }

    /// Completes several deliveries in one call: one entry per delivery, in
    /// order, `Ok` when acked, else what [`SeppClient::ack`] would have
    /// answered for it alone ([`Error::LeaseLost`] when its lease was no
    /// longer its own). A lease found lost by a retry, after an attempt that
    /// may have acked it, is [`Error::UnknownOutcome`]. The outer error is
    /// set only when the call as a whole failed.
    pub async fn ack_batch(&self, ctxs: &[JobContext]) -> Result<Vec<Result<(), Error>>, Error> {
        if ctxs.is_empty() {
            return Ok(Vec::new());
        }
        let req = pb::AckBatchRequest {
            ctxs: ctxs.iter().map(JobContext::to_wire).collect(),
        };
        let (resp, retried): (pb::AckBatchResponse, bool) = self.call("ack batch", "sepp.v1.QueueService/AckBatch", &req, Policy::Safe, Duration::ZERO).await?;
        if resp.results.len() != ctxs.len() {
            return Err(Error::internal("ack batch", format!("the server answered {} results for {} deliveries", resp.results.len(), ctxs.len())));
        }
        Ok(resp
            .results
            .into_iter()
            .map(|r| match r.error {
                None => Ok(()),
                Some(e) => match item_error("ack", e) {
                    err @ Error::LeaseLost { .. } if retried => Err(Error::unknown_outcome("ack", "a retry found the lease gone after an attempt that may have acked it", err)),
                    err => Err(err),
                },
            })
            .collect())
    }

    /// Fails a delivery; the directive says what happens next. True exactly
    /// when the job was dead-lettered (DeadLetter, or the failing attempt
    /// reached max_attempts).
    pub async fn nack(&self, ctx: &JobContext, directive: RetryDirective, reason: impl Into<String>) -> Result<bool, Error> {
        use pb::retry_directive::Directive;
        let d = match directive {
            RetryDirective::Default => Directive::Default(()),
            RetryDirective::After(delay) => Directive::After(duration(delay)),
            RetryDirective::DeadLetter => Directive::DeadLetter(()),
        };
        let req = pb::NackRequest {
            ctx: Some(ctx.to_wire()),
            directive: Some(pb::RetryDirective { directive: Some(d) }),
            reason: reason.into(),
        };
        let (resp, _): (pb::NackResponse, bool) = self.call("nack", "sepp.v1.QueueService/Nack", &req, Policy::Safe, Duration::ZERO).await?;
        Ok(resp.dead_lettered)
    }

    /// Hands a delivery back without burning an attempt: Ready again at
    /// once.
    pub async fn release(&self, ctx: &JobContext) -> Result<(), Error> {
        let _: (pb::ReleaseResponse, bool) = self.call("release", "sepp.v1.QueueService/Release", &pb::ReleaseRequest { ctx: Some(ctx.to_wire()) }, Policy::Safe, Duration::ZERO).await?;
        Ok(())
    }

    /// Extends a delivery's lease to `lease` from now; returns the new
    /// deadline.
    pub async fn extend_lease(&self, ctx: &JobContext, lease: Duration) -> Result<SystemTime, Error> {
        let req = pb::ExtendLeaseRequest {
            ctx: Some(ctx.to_wire()),
            lease: Some(duration(lease)),
            progress: None,
        };
        let (resp, _): (pb::ExtendLeaseResponse, bool) = self.call("extend lease", "sepp.v1.QueueService/ExtendLease", &req, Policy::Safe, Duration::ZERO).await?;
        resp.lease_deadline
            .and_then(system_time)
            .ok_or_else(|| Error::internal("extend lease", "the server answered no lease deadline"))
    }

    /// Reports a running job's progress (`percent` 0..=100, `message` at
    /// most 256 bytes) and extends its lease to `lease` from now
    /// (`Duration::ZERO`: the server's default lease), in one call and one
    /// log entry. `get_job`, `list_jobs` and `wait_job` show it
    /// ([`Job::progress`]) until the delivery ends. Out of bounds:
    /// [`Error::InvalidArgument`] naming `progress.percent` or
    /// `progress.message`. While some member of the cluster does not keep
    /// progress yet (a rolling upgrade) it is [`Error::WrongState`]
    /// (`VERSION feature=progress`) and nothing is extended.
    pub async fn report_progress(&self, ctx: &JobContext, percent: u32, message: &str, lease: Duration) -> Result<SystemTime, Error> {
        check_progress("report progress", percent, message)?;
        let req = pb::ExtendLeaseRequest {
            ctx: Some(ctx.to_wire()),
            lease: if lease.is_zero() { None } else { Some(duration(lease)) },
            progress: Some(pb::Progress { percent, message: message.to_string() }),
        };
        let (resp, _): (pb::ExtendLeaseResponse, bool) = self.call("report progress", "sepp.v1.QueueService/ExtendLease", &req, Policy::Safe, Duration::ZERO).await?;
        resp.lease_deadline
            .and_then(system_time)
            .ok_or_else(|| Error::internal("report progress", "the server answered no lease deadline"))
    }

    /// Removes and returns up to max dead-letter records, oldest first, of
    /// queue (`None`: every queue). Destructive: a lost answer loses that
    /// batch, so it is retried only when the server said nothing was
    /// applied; otherwise [`Error::UnknownOutcome`].
    pub async fn drain_dead_letters(&self, queue: Option<&str>, max: u32) -> Result<Vec<DeadLetterRecord>, Error> {
        let req = pb::DrainDeadLettersRequest {
            queue: queue.map(str::to_string),
            max,
        };
        let (resp, _): (pb::DrainDeadLettersResponse, bool) = self.call("drain dead letters", "sepp.v1.QueueService/DrainDeadLetters", &req, Policy::NotSent, Duration::ZERO).await?;
        Ok(resp.records.into_iter().map(DeadLetterRecord::from_wire).collect())
    }

    // ---- schedules ----

    /// Creates a schedule. A name that exists is [`Error::AlreadyExists`];
    /// a bad spec, zone or template [`Error::InvalidArgument`] naming the
    /// field. Not retried once it may have applied (the retry would find
    /// it existing): [`Error::UnknownOutcome`] then.
    pub async fn create_schedule(&self, definition: &ScheduleDefinition) -> Result<Schedule, Error> {
        let req = pb::CreateScheduleRequest {
            schedule: Some(definition.to_wire()),
        };
        let (r, _): (pb::CreateScheduleResponse, bool) = self.call("create schedule", "sepp.v1.AdminService/CreateSchedule", &req, Policy::NotSent, Duration::ZERO).await?;
        schedule_of("create schedule", r.schedule)
    }

    /// Replaces a schedule's definition (`definition.paused` is ignored:
    /// the schedule stays paused or running); the last fired tick is kept, so no tick
    /// fires twice. An unknown name is [`Error::NotFound`]. Retried:
    /// applying the same definition twice is applying it once.
    pub async fn update_schedule(&self, definition: &ScheduleDefinition) -> Result<Schedule, Error> {
        let req = pb::UpdateScheduleRequest {
            schedule: Some(definition.to_wire()),
            // The whole definition (no mask): every field is replaced.
            update_mask: None,
        };
        let (r, _): (pb::UpdateScheduleResponse, bool) = self.call("update schedule", "sepp.v1.AdminService/UpdateSchedule", &req, Policy::Safe, Duration::ZERO).await?;
        schedule_of("update schedule", r.schedule)
    }

    /// Removes a schedule (the jobs it fired stay). An unknown name is
    /// [`Error::NotFound`]. Not retried once it may have applied.
    pub async fn delete_schedule(&self, name: &str) -> Result<(), Error> {
        let req = pb::DeleteScheduleRequest { name: name.to_string() };
        let _: (pb::DeleteScheduleResponse, bool) = self.call("delete schedule", "sepp.v1.AdminService/DeleteSchedule", &req, Policy::NotSent, Duration::ZERO).await?;
        Ok(())
    }

    /// One schedule as the leader holds it, with up to `next_fire_times`
    /// next ticks (0: the server's 5; at most 100).
    pub async fn get_schedule(&self, name: &str, next_fire_times: u32) -> Result<Schedule, Error> {
        let req = pb::GetScheduleRequest {
            name: name.to_string(),
            next_fire_times,
            allow_stale: false,
        };
        let (r, _): (pb::GetScheduleResponse, bool) = self.call("get schedule", "sepp.v1.AdminService/GetSchedule", &req, Policy::Safe, Duration::ZERO).await?;
        schedule_of("get schedule", r.schedule)
    }

    /// Every schedule, by name, each with up to `next_fire_times` next
    /// ticks (0: the server's 1).
    pub async fn list_schedules(&self, next_fire_times: u32) -> Result<Vec<Schedule>, Error> {
        let req = pb::ListSchedulesRequest {
            next_fire_times,
            allow_stale: false,
        };
        let (r, _): (pb::ListSchedulesResponse, bool) = self.call("list schedules", "sepp.v1.AdminService/ListSchedules", &req, Policy::Safe, Duration::ZERO).await?;
        Ok(r.schedules.into_iter().map(Schedule::from_wire).collect())
    }

    /// Stops a schedule firing: paused, with no next fire times. Retried:
    /// pausing twice is pausing.
    pub async fn pause_schedule(&self, name: &str) -> Result<Schedule, Error> {
        let req = pb::PauseScheduleRequest { name: name.to_string() };
        let (r, _): (pb::PauseScheduleResponse, bool) = self.call("pause schedule", "sepp.v1.AdminService/PauseSchedule", &req, Policy::Safe, Duration::ZERO).await?;
        schedule_of("pause schedule", r.schedule)
    }

    /// Restarts a paused schedule from its first tick after now (the
    /// paused ticks are not caught up). Retried: a second resume only
    /// recomputes the next tick.
    pub async fn resume_schedule(&self, name: &str) -> Result<Schedule, Error> {
        let req = pb::ResumeScheduleRequest { name: name.to_string() };
        let (r, _): (pb::ResumeScheduleResponse, bool) = self.call("resume schedule", "sepp.v1.AdminService/ResumeSchedule", &req, Policy::Safe, Duration::ZERO).await?;
        schedule_of("resume schedule", r.schedule)
    }

    // ---- reading ----

    /// The leader's view of the server and its limits.
    pub async fn server_info(&self) -> Result<ServerInfo, Error> {
        self.server_info_with("server info", false).await
    }

    async fn server_info_with(&self, op: &'static str, allow_stale: bool) -> Result<ServerInfo, Error> {
        let (r, _): (pb::GetServerInfoResponse, bool) = self.call(op, "sepp.v1.QueueService/GetServerInfo", &pb::GetServerInfoRequest { allow_stale }, Policy::Safe, Duration::ZERO).await?;
        Ok(ServerInfo {
            version: r.version,
            node_id: r.node_id,
            leader_id: r.leader_id,
            leader_addr: r.leader_grpc_addr,
            dead_letter_retention_enabled: r.dead_letter_retention_enabled,
            max_reserve_batch: r.max_reserve_batch,
            max_schedule_horizon: Duration::from_millis(r.max_schedule_horizon_ms.max(0) as u64),
        })
    }

    /// One job as the leader holds it ([`Error::NotFound`] once it is gone).
    pub async fn get_job(&self, job_id: u64) -> Result<Job, Error> {
        let (r, _): (pb::GetJobResponse, bool) = self.call("get job", "sepp.v1.AdminService/GetJob", &pb::GetJobRequest { job_id, allow_stale: false }, Policy::Safe, Duration::ZERO).await?;
        r.job.map(Job::from_wire).ok_or_else(|| Error::internal("get job", "the server answered no job"))
    }

    /// Up to 1000 jobs of queue in state (Scheduled, Ready, Reserved,
    /// Blocked, or Completed where the queue keeps completed jobs), in id
    /// order.
    pub async fn list_jobs(&self, queue: &str, state: JobState) -> Result<Vec<Job>, Error> {
        let req = pb::ListJobsRequest {
            queue: queue.to_string(),
            state: state.to_wire() as i32,
            after_job_id: 0,
            limit: 1000,
            allow_stale: false,
        };
        let (r, _): (pb::ListJobsResponse, bool) = self.call("list jobs", "sepp.v1.AdminService/ListJobs", &req, Policy::Safe, Duration::ZERO).await?;
        Ok(r.jobs.into_iter().map(Job::from_wire).collect())
    }
}

fn schedule_of(op: &'static str, s: Option<pb::Schedule>) -> Result<Schedule, Error> {
    s.map(Schedule::from_wire).ok_or_else(|| Error::internal(op, "the server answered no schedule"))
}

fn unavailable(op: &'static str, message: String) -> Error {
    Error::Unavailable {
        op,
        message,
        leader_id: String::new(),
        leader_addr: String::new(),
    }
}

/// The typed error of one batch item, whose code is gRPC's number.
pub(crate) fn item_error(op: &'static str, e: pb::ItemError) -> Error {
    use crate::error::Code;
    const CODES: [Code; 17] = [
        Code::Unknown,
        Code::Canceled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];
    let code = usize::try_from(e.code).ok().and_then(|i| CODES.get(i).copied()).unwrap_or(Code::Unknown);
    let details: Vec<Detail> = e.details.iter().filter_map(|a| Detail::decode(&a.type_url, &a.value)).collect();
    from_status(op, code, e.message, &details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let cases = vec![
            ("http://localhost:50051", Some("http://localhost:50051")),
            ("localhost:50051/", Some("http://localhost:50051")),
            (" 127.0.0.1:7 ", Some("http://127.0.0.1:7")),
            ("https://n1:50051", None),
            ("localhost", None),
            ("http://n1:1/x", None),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_addr(input).ok().as_deref(), want, "{:?}", input);
        }
    }

    #[test]
    fn keys_are_fresh_hex() {
        let a = new_key().unwrap();
        let b = new_key().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
