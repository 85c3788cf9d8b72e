//! The Rust runner of the SDK conformance suite (conformance/ at the
//! repository's root): it interprets the scenario files with SeppClient
//! against the shared three-node cluster. The format and the step
//! vocabulary are in conformance/README.md; the Go runner
//! (conformance/runner_test.go) is the reference this one follows. The
//! last tests hold the runner to failing: a scenario that expects the
//! wrong thing is reported.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use sepp_rs::client::{ReserveOptions, RetryDirective, SeppClient};
use sepp_rs::{
    ActionResult, DeadLetterCause, DeadLetterRecord, Delivery, EnqueueRequest, EnqueueResult, Error, Job, JobState, JobTemplate, Page, ParentFailure, Priority, PurgeTarget, QueueSettings,
    QueueStats, QueueUpdate, RedriveOptions, RedriveSelection, RedriveState, RedriveTask, RetryBackoff, Schedule, ScheduleDefinition, ScheduleSpec, UniqueOptions,
};

fn scenario_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/scenarios")
}

/// Why a scenario failed: a step did not do what it expects, or the file
/// is malformed.
#[derive(Debug)]
struct Mismatch(String);

fn mismatch<T>(msg: impl Into<String>) -> Result<T, Mismatch> {
    Err(Mismatch(msg.into()))
}

/// A failed call, named by the suite's error kind.
struct StepError {
    kind: &'static str,
    field: String,
    err: Error,
}

impl StepError {
    fn describe(&self) -> String {
        format!("{} (field {:?}): {}", self.kind, self.field, self.err)
    }
}

enum CallError {
    Step(StepError),
    Runner(Mismatch),
}

impl From<Mismatch> for CallError {
    fn from(m: Mismatch) -> Self {
        CallError::Runner(m)
    }
}

impl From<Error> for CallError {
    fn from(e: Error) -> Self {
        let field = match &e {
            Error::InvalidArgument { field, .. } | Error::NotFound { field, .. } | Error::AlreadyExists { field, .. } => field.clone(),
            _ => String::new(),
        };
        CallError::Step(StepError { kind: error_kind(&e), field, err: e })
    }
}

fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::JobCancelled { .. } => "job_cancelled",
        Error::LeaseLost { .. } => "lease_lost",
        Error::ScheduledTooFar { .. } => "scheduled_too_far",
        Error::QueueFull { .. } => "queue_full",
        Error::UniqueConflict { .. } => "unique_conflict",
        Error::InvalidArgument { .. } => "invalid_argument",
        Error::NotFound { .. } => "not_found",
        Error::WrongState { .. } => "wrong_state",
        Error::AlreadyExists { .. } => "already_exists",
        Error::ResourceExhausted { .. } => "resource_exhausted",
        Error::UnknownOutcome { .. } => "unknown_outcome",
        Error::Unavailable { .. } => "unavailable",
        Error::PermissionDenied { .. } => "permission_denied",
        Error::Unauthenticated { .. } => "unauthenticated",
        Error::Internal { .. } => "internal",
        _ => "unknown",
    }
}

struct Step {
    op: String,
    args: Map<String, Value>,
    expect: Option<Value>,
    error: Option<(String, Option<String>)>,
    save: Vec<(String, String)>,
    within_ms: u64,
}

struct Scenario {
    description: String,
    steps: Vec<Step>,
}

fn parse_scenario(text: &str) -> Result<Scenario, Mismatch> {
    let raw: Value = serde_json::from_str(text).map_err(|e| Mismatch(format!("not JSON: {}", e)))?;
    let obj = match raw.as_object() {
        Some(o) => o,
        None => return mismatch("a scenario is an object"),
    };
    for k in obj.keys() {
        if k != "description" && k != "steps" {
            return mismatch(format!("unknown scenario field {}", k));
        }
    }
    let mut steps = Vec::new();
    for s in obj.get("steps").and_then(Value::as_array).cloned().unwrap_or_default() {
        let s = match s {
            Value::Object(o) => o,
            _ => return mismatch("a step is an object"),
        };
        for k in s.keys() {
            if !["op", "args", "expect", "error", "save", "within_ms"].contains(&k.as_str()) {
                return mismatch(format!("unknown step field {}", k));
            }
        }
        let op = match s.get("op").and_then(Value::as_str) {
            Some(op) => op.to_string(),
            None => return mismatch("a step names its op"),
        };
        let error = match s.get("error") {
            Some(Value::Object(e)) => {
                for k in e.keys() {
                    if k != "kind" && k != "field" {
                        return mismatch(format!("unknown error field {}", k));
                    }
                }
                Some((e.get("kind").and_then(Value::as_str).unwrap_or("").to_string(), e.get("field").and_then(Value::as_str).map(str::to_string)))
            }
            _ => None,
        };
        let save = s.get("save").and_then(Value::as_object).map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect()).unwrap_or_default();
        steps.push(Step {
            op,
            args: s.get("args").and_then(Value::as_object).cloned().unwrap_or_default(),
            expect: s.get("expect").cloned().filter(|v| !v.is_null()),
            error,
            save,
            within_ms: s.get("within_ms").and_then(Value::as_u64).unwrap_or(0),
        });
    }
    if steps.is_empty() {
        return mismatch("no steps");
    }
    Ok(Scenario {
        description: obj.get("description").and_then(Value::as_str).unwrap_or("").to_string(),
        steps,
    })
}

fn load_scenarios() -> BTreeMap<String, Scenario> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(scenario_dir()).expect("read conformance/scenarios") {
        let path = entry.expect("a directory entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a file name").to_string();
        let text = std::fs::read_to_string(&path).expect("read a scenario");
        let sc = parse_scenario(&text).unwrap_or_else(|m| panic!("{}: {}", path.display(), m.0));
        out.insert(name, sc);
    }
    out
}

/// ${name} in every string: a string that is only a reference takes the
/// value with its type; inside a longer one the value is written in.
fn substitute(v: &Value, vars: &HashMap<String, Value>) -> Result<Value, Mismatch> {
    match v {
        Value::String(s) => {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(start) = rest.find("${") {
                let end = match rest[start..].find('}') {
                    Some(e) => start + e,
                    None => break,
                };
                let name = &rest[start + 2..end];
                let val = match vars.get(name) {
                    Some(v) => v,
                    None => return mismatch(format!("unknown variable ${{{}}}", name)),
                };
                if start == 0 && end == rest.len() - 1 && out.is_empty() {
                    return Ok(val.clone());
                }
                out.push_str(&rest[..start]);
                match val {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
                rest = &rest[end + 1..];
            }
            out.push_str(rest);
            Ok(Value::String(out))
        }
        Value::Array(a) => Ok(Value::Array(a.iter().map(|e| substitute(e, vars)).collect::<Result<_, _>>()?)),
        Value::Object(o) => {
            let mut m = Map::new();
            for (k, e) in o {
                m.insert(k.clone(), substitute(e, vars)?);
            }
            Ok(Value::Object(m))
        }
        other => Ok(other.clone()),
    }
}

/// Where actual differs from expected: objects match partially (null
/// expects the key unset or null), arrays element by element, scalars by
/// value (numbers as numbers).
fn matches(path: &str, expected: &Value, actual: &Value) -> Result<(), Mismatch> {
    match expected {
        Value::Null => {
            if !actual.is_null() {
                return mismatch(format!("{}: expected null, got {}", path, actual));
            }
        }
        Value::Object(e) => {
            let a = match actual.as_object() {
                Some(a) => a,
                None => return mismatch(format!("{}: expected an object, got {}", path, actual)),
            };
            for (k, ev) in e {
                matches(&format!("{}.{}", path, k), ev, a.get(k).unwrap_or(&Value::Null))?;
            }
        }
        Value::Array(e) => {
            let a = match actual.as_array() {
                Some(a) => a,
                None => return mismatch(format!("{}: expected an array, got {}", path, actual)),
            };
            if a.len() != e.len() {
                return mismatch(format!("{}: expected {} elements, got {}: {}", path, e.len(), a.len(), actual));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                matches(&format!("{}[{}]", path, i), ev, av)?;
            }
        }
        Value::Number(n) => {
            if actual.as_f64() != n.as_f64() || !actual.is_number() {
                return mismatch(format!("{}: expected {}, got {}", path, expected, actual));
            }
        }
        _ => {
            if expected != actual {
                return mismatch(format!("{}: expected {}, got {}", path, expected, actual));
            }
        }
    }
    Ok(())
}

fn lookup(v: &Value, path: &str) -> Result<Value, Mismatch> {
    let mut v = v;
    for part in path.split('.') {
        v = match v {
            Value::Object(o) if o.contains_key(part) => &o[part],
            Value::Array(a) if part.parse::<usize>().map(|i| i < a.len()).unwrap_or(false) => &a[part.parse::<usize>().unwrap_or(0)],
            _ => return mismatch(format!("no {:?} in {}", part, v)),
        };
    }
    Ok(v.clone())
}

/// Typed reads of a step's arguments.
struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    fn has(&self, k: &str) -> bool {
        self.0.get(k).map(|v| !v.is_null()).unwrap_or(false)
    }
    fn str(&self, k: &str) -> Result<String, Mismatch> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => mismatch(format!("argument {}: want a string, got {}", k, v)),
        }
    }
    fn num(&self, k: &str) -> Result<u64, Mismatch> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v.as_u64().ok_or_else(|| Mismatch(format!("argument {}: want a whole number, got {}", k, v))),
        }
    }
    fn boolean(&self, k: &str) -> Result<bool, Mismatch> {
        match self.0.get(k) {
            None | Some(Value::Null) => Ok(false),
            Some(v) => v.as_bool().ok_or_else(|| Mismatch(format!("argument {}: want a bool, got {}", k, v))),
        }
    }
    fn ids(&self, k: &str) -> Result<Vec<u64>, Mismatch> {
        let a = self.0.get(k).and_then(Value::as_array).ok_or_else(|| Mismatch(format!("argument {}: want an array of job ids", k)))?;
        a.iter().map(|v| v.as_u64().ok_or_else(|| Mismatch(format!("argument {}: {} is not a job id", k, v)))).collect()
    }
    fn strs(&self, k: &str) -> Vec<String> {
        self.0.get(k).and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn whole_ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn state_name(s: JobState) -> &'static str {
    match s {
        JobState::Scheduled => "scheduled",
        JobState::Ready => "ready",
        JobState::Reserved => "reserved",
        JobState::Dead => "dead",
        JobState::Completed => "completed",
        JobState::Blocked => "blocked",
        JobState::Unspecified => "unknown",
    }
}

const CAUSES: [(&str, DeadLetterCause); 6] = [
    ("attempts_exhausted", DeadLetterCause::AttemptsExhausted),
    ("rejected", DeadLetterCause::Rejected),
    ("lease_expired", DeadLetterCause::LeaseExpired),
    ("admin", DeadLetterCause::Admin),
    ("cancelled", DeadLetterCause::Cancelled),
    ("expired", DeadLetterCause::Expired),
];

fn cause_name(c: DeadLetterCause) -> &'static str {
    CAUSES.iter().find(|(_, x)| *x == c).map(|(n, _)| *n).unwrap_or("unknown")
}

fn job_result(j: &Job) -> Value {
    // A parent's cause: null unless it is dead.
    let parents: Vec<Value> = j
        .parents
        .iter()
        .map(|p| json!({"job_id": p.job_id, "state": state_name(p.state), "cause": (p.state == JobState::Dead).then(|| cause_name(p.cause)), "ended": p.ended}))
        .collect();
    let policy = j.on_parent_failure.map(|p| match p {
        ParentFailure::Cancel => "cancel",
        ParentFailure::Run => "run",
    });
    json!({
        "job_id": j.id, "queue": j.queue, "job_type": j.job_type, "payload": text(&j.payload), "state": state_name(j.state),
        "priority": j.priority, "attempt": j.attempt, "max_attempts": j.max_attempts, "last_reason": j.last_reason.clone().unwrap_or_default(),
        "parents": parents, "on_parent_failure": policy,
        "waiting_children": j.waiting_children, "waiting_children_total": j.waiting_children_total,
    })
}

fn dead_letter_result(r: &DeadLetterRecord) -> Value {
    json!({
        "job_id": r.job_id, "queue": r.job.queue, "job_type": r.job.job_type, "payload": text(&r.job.payload),
        "cause": cause_name(r.cause), "final_attempt": r.final_attempt, "last_reason": r.last_reason.clone().unwrap_or_default(),
    })
}

fn stats_result(q: &QueueStats) -> Map<String, Value> {
    let tags = if q.tags.is_empty() { Value::Null } else { json!(q.tags) };
    let v = json!({"name": q.name, "paused": q.paused, "scheduled": q.scheduled, "ready": q.ready, "reserved": q.reserved, "dead": q.dead, "blocked": q.blocked, "tags": tags});
    v.as_object().cloned().unwrap_or_default()
}

fn settings_result(s: &QueueSettings) -> Value {
    json!({
        "default_priority": s.default_priority,
        "default_max_attempts": s.default_max_attempts,
        "retry_delay_ms": s.retry_delay.map(whole_ms),
        "retry_backoff": s.retry_backoff.map(|b| if b == RetryBackoff::Exponential { "exponential" } else { "none" }),
        "retry_delay_max_ms": s.retry_delay_max.map(whole_ms),
        "max_schedule_horizon_ms": s.max_schedule_horizon.map(whole_ms),
        "max_length": s.max_length,
        "dead_letter_queue": s.dead_letter_queue,
        "tags": s.tags,
    })
}

fn queue_settings(a: &Args) -> Result<QueueSettings, Mismatch> {
    let u32_of = |k: &str| -> Result<Option<u32>, Mismatch> { Ok(if a.has(k) { Some(a.num(k)? as u32) } else { None }) };
    let u64_of = |k: &str| -> Result<Option<u64>, Mismatch> { Ok(if a.has(k) { Some(a.num(k)?) } else { None }) };
    let dur_of = |k: &str| -> Result<Option<Duration>, Mismatch> { Ok(if a.has(k) { Some(ms(a.num(k)?)) } else { None }) };
    let str_of = |k: &str| -> Result<Option<String>, Mismatch> { Ok(if a.has(k) { Some(a.str(k)?) } else { None }) };
    let backoff = match str_of("retry_backoff")?.as_deref() {
        None => None,
        Some("none") => Some(RetryBackoff::None),
        Some("exponential") => Some(RetryBackoff::Exponential),
        Some(other) => return mismatch(format!("argument retry_backoff: unknown {}", other)),
    };
    Ok(QueueSettings {
        default_priority: u32_of("default_priority")?,
        default_max_attempts: u32_of("default_max_attempts")?,
        retry_delay: dur_of("retry_delay_ms")?,
        retry_backoff: backoff,
        retry_delay_max: dur_of("retry_delay_max_ms")?,
        max_schedule_horizon: dur_of("max_schedule_horizon_ms")?,
        max_length: u64_of("max_length")?,
        dead_letter_queue: str_of("dead_letter_queue")?,
        tags: match a.0.get("tags") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(
                m.iter()
                    .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())).ok_or_else(|| Mismatch(format!("argument tags.{}: want a string", k))))
                    .collect::<Result<_, _>>()?,
            ),
            Some(v) => return mismatch(format!("argument tags: want an object, got {}", v)),
        },
        ..QueueSettings::default()
    })
}

fn actions_result(rs: &[ActionResult]) -> Value {
    let results: Vec<Value> = rs.iter().map(|r| json!({"job_id": r.job_id, "error": r.error.as_ref().map(error_kind)})).collect();
    json!({ "results": results })
}

fn task_result(t: &RedriveTask) -> Value {
    let state = match t.state {
        RedriveState::Running => "running",
        RedriveState::Paused => "paused",
        RedriveState::Cancelled => "cancelled",
        RedriveState::Done => "done",
        RedriveState::Unspecified => "unspecified",
    };
    json!({
        "id": t.id, "state": state, "queue": t.options.selection.queue, "fresh": t.options.fresh, "to_queue": t.options.to_queue,
        "rate": t.options.rate, "moved": t.moved, "remaining": t.remaining,
    })
}

fn redrive(a: &Args) -> Result<RedriveOptions, Mismatch> {
    let cause = if a.has("cause") {
        let c = a.str("cause")?;
        match CAUSES.iter().find(|(n, _)| *n == c) {
            Some((_, c)) => Some(*c),
            None => return mismatch(format!("argument cause: unknown cause {}", c)),
        }
    } else {
        None
    };
    Ok(RedriveOptions {
        selection: RedriveSelection {
            queue: a.str("queue")?,
            cause,
            job_type: a.str("job_type")?,
            reason_contains: a.str("reason_contains")?,
            ..RedriveSelection::default()
        },
        to_queue: a.str("to_queue")?,
        fresh: a.boolean("fresh")?,
        rate: a.num("rate")? as u32,
    })
}

/// enqueue's arguments (also each item of enqueue_batch's jobs); an
/// argument EnqueueRequest or Priority refuses (priority 12) is the SDK's
/// error.
fn enqueue_request(a: &Args) -> Result<Result<EnqueueRequest, Error>, Mismatch> {
    let (queue, job_type, payload) = (a.str("queue")?, a.str("job_type")?, a.str("payload")?);
    let opt = |k: &str| -> Result<Option<u64>, Mismatch> { Ok(if a.has(k) { Some(a.num(k)?) } else { None }) };
    let (priority, delay, max_attempts, ttl) = (opt("priority")?, opt("delay_ms")?, opt("max_attempts")?, opt("ttl_ms")?);
    let key = if a.has("idempotency_key") { Some(a.str("idempotency_key")?) } else { None };
    let unique = if a.has("unique_key") { Some(UniqueOptions::by_key(a.str("unique_key")?).with_refuse(a.boolean("unique_refuse")?)) } else { None };
    let after = if a.has("after") { a.ids("after")? } else { Vec::new() };
    let policy = match a.str("on_parent_failure")?.as_str() {
        "" => None,
        "cancel" => Some(ParentFailure::Cancel),
        "run" => Some(ParentFailure::Run),
        other => return mismatch(format!("argument on_parent_failure: want cancel or run, got {}", other)),
    };
    let build = || -> Result<EnqueueRequest, Error> {
        let mut req = EnqueueRequest::new(queue, job_type)?.with_payload(payload.into_bytes());
        if let Some(p) = priority {
            req = req.with_priority(Priority::new(p as u32)?);
        }
        if let Some(d) = delay {
            req = req.with_scheduled_at(SystemTime::now() + ms(d));
        }
        if let Some(n) = max_attempts {
            req = req.with_max_attempts(n as u32);
        }
        if let Some(k) = key {
            req = req.with_idempotency_key(k);
        }
        if let Some(u) = unique {
            req = req.with_unique(u);
        }
        if let Some(t) = ttl {
            req = req.with_ttl(ms(t));
        }
        if !after.is_empty() {
            req = req.with_after(after.into_iter().map(|i| i as usize));
        }
        if let Some(p) = policy {
            req = req.with_on_parent_failure(p);
        }
        Ok(req)
    };
    Ok(build())
}

fn batch_item(r: &Result<EnqueueResult, Error>) -> Value {
    match r {
        Ok(r) => json!({"job_id": r.job_id, "state": state_name(r.state), "duplicate": r.duplicate, "error": null}),
        Err(e) => json!({"job_id": null, "state": null, "duplicate": null, "error": error_kind(e)}),
    }
}

/// A schedule's stable part: no fire times or counters, which depend on
/// the clock.
fn schedule_result(s: &Schedule) -> Value {
    let d = &s.definition;
    let (cron, interval_ms) = match &d.spec {
        ScheduleSpec::Cron(c) => (c.clone(), 0),
        ScheduleSpec::Interval(i) => (String::new(), whole_ms(*i)),
    };
    json!({
        "name": d.name, "paused": d.paused, "queue": d.template.queue, "job_type": d.template.job_type, "payload": text(&d.template.payload),
        "cron": cron, "interval_ms": interval_ms, "time_zone": d.time_zone,
    })
}

/// Runs steps with SeppClient; keeps each reserved job's last delivery for
/// ack, nack, release and extend_lease.
struct Driver<'c> {
    c: &'c SeppClient,
    deliveries: HashMap<u64, Delivery>,
}

impl<'c> Driver<'c> {
    fn delivery(&self, a: &Args) -> Result<Delivery, Mismatch> {
        let id = a.num("job_id")?;
        self.deliveries.get(&id).cloned().ok_or_else(|| Mismatch(format!("job {} was never reserved in this scenario", id)))
    }

    async fn call(&mut self, op: &str, m: &Map<String, Value>) -> Result<Value, CallError> {
        let a = Args(m);
        let c = self.c;
        let v = match op {
            "enqueue" => {
                let req = enqueue_request(&a)??;
                let r = c.enqueue(req).await?;
                json!({"job_id": r.job_id, "state": state_name(r.state), "duplicate": r.duplicate})
            }
            "reserve" => {
                let opts = ReserveOptions {
                    worker_id: "conformance".into(),
                    max: a.num("max")?.max(1) as u32,
                    lease: if a.has("lease_ms") { Some(ms(a.num("lease_ms")?)) } else { None },
                    wait: Duration::ZERO,
                };
                let ds = c.reserve(&a.str("queue")?, opts).await?;
                let mut jobs = Vec::new();
                for d in ds {
                    jobs.push(json!({
                        "job_id": d.ctx.job_id, "queue": d.job.queue, "job_type": d.job.job_type, "payload": text(&d.job.payload),
                        "priority": d.job.priority, "attempt": d.ctx.attempt, "max_attempts": d.ctx.max_attempts,
                    }));
                    self.deliveries.insert(d.ctx.job_id, d);
                }
                json!({ "jobs": jobs })
            }
            "ack" => {
                c.ack(&self.delivery(&a)?.ctx).await?;
                json!({})
            }
            "ack_follow_ups" => {
                let d = self.delivery(&a)?;
                let items = a.0.get("follow_ups").and_then(Value::as_array).ok_or_else(|| Mismatch("argument follow_ups: want an array of enqueue arguments".into()))?;
                let mut reqs = Vec::new();
                for item in items {
                    let m = item.as_object().ok_or_else(|| Mismatch(format!("argument follow_ups: {} is not an object", item)))?;
                    reqs.push(enqueue_request(&Args(m))??);
                }
                let rs = c.ack_with_follow_ups(&d.ctx, reqs, Vec::new()).await?;
                let follow_ups: Vec<Value> = rs.iter().map(|r| json!({"job_id": r.job_id, "state": state_name(r.state), "duplicate": r.duplicate})).collect();
                json!({ "follow_ups": follow_ups })
            }
            "nack" => {
                let d = self.delivery(&a)?;
                let dir = match a.str("directive")?.as_str() {
                    "" | "default" => RetryDirective::Default,
                    "after" => RetryDirective::After(ms(a.num("delay_ms")?)),
                    "dead_letter" => RetryDirective::DeadLetter,
                    other => return Err(Mismatch(format!("argument directive: unknown directive {}", other)).into()),
                };
                let dead = c.nack(&d.ctx, dir, a.str("reason")?).await?;
                json!({ "dead_lettered": dead })
            }
            "release" => {
                c.release(&self.delivery(&a)?.ctx).await?;
                json!({})
            }
            "extend_lease" => {
                c.extend_lease(&self.delivery(&a)?.ctx, ms(a.num("lease_ms")?)).await?;
                json!({})
            }
            "get_job" => job_result(&c.get_job(a.num("job_id")?).await?),
            "list_jobs" => {
                let state = match a.str("state")?.as_str() {
                    "scheduled" => JobState::Scheduled,
                    "ready" => JobState::Ready,
                    "reserved" => JobState::Reserved,
                    "blocked" => JobState::Blocked,
                    "completed" => JobState::Completed,
                    other => return Err(Mismatch(format!("argument state: unknown state {}", other)).into()),
                };
                let (jobs, _) = c.list_jobs_page(&a.str("queue")?, state, Page::default()).await?;
                json!({ "jobs": jobs.iter().map(job_result).collect::<Vec<_>>() })
            }
            "set_jobs_priority" => actions_result(&c.set_jobs_priority(&a.ids("job_ids")?, a.num("priority")? as u32).await?),
            "run_jobs_now" => actions_result(&c.run_jobs_now(&a.ids("job_ids")?).await?),
            "delete_jobs" => actions_result(&c.delete_jobs(&a.ids("job_ids")?).await?),
            "reschedule_jobs" => actions_result(&c.reschedule_jobs(&a.ids("job_ids")?, SystemTime::now() + ms(a.num("delay_ms")?)).await?),
            "cancel_jobs" => actions_result(&c.cancel_jobs(&a.ids("job_ids")?, a.boolean("delete")?, &a.str("reason")?).await?),
            "dead_letter_jobs" => actions_result(&c.dead_letter_jobs(&a.ids("job_ids")?, &a.str("reason")?).await?),
            "requeue_dead_letters" => actions_result(&c.requeue_dead_letters(&a.ids("job_ids")?).await?),
            "delete_dead_letters" => actions_result(&c.delete_dead_letters(&a.ids("job_ids")?).await?),
            "list_dead_letters" => {
                let (records, _) = c.list_dead_letters(&a.str("queue")?, Page::default()).await?;
                json!({ "records": records.iter().map(dead_letter_result).collect::<Vec<_>>() })
            }
            "get_dead_letter" => dead_letter_result(&c.get_dead_letter(a.num("job_id")?).await?),
            "create_queue" => {
                let settings = queue_settings(&Args(a.0.get("settings").and_then(Value::as_object).unwrap_or(&Map::new())))?;
                let eff = c.create_queue(&a.str("name")?, &settings, a.boolean("paused")?).await?;
                json!({ "effective": settings_result(&eff) })
            }
            "update_queue" => {
                let settings = queue_settings(&Args(a.0.get("settings").and_then(Value::as_object).unwrap_or(&Map::new())))?;
                let update = QueueUpdate {
                    settings,
                    inherit: a.strs("inherit"),
                    paused: if a.has("paused") { Some(a.boolean("paused")?) } else { None },
                };
                let eff = c.update_queue(&a.str("name")?, &update).await?;
                json!({ "effective": settings_result(&eff) })
            }
            "get_queue" => {
                let q = c.get_queue(&a.str("name")?).await?;
                let mut m = stats_result(&q.stats);
                m.insert("settings".into(), settings_result(&q.settings));
                m.insert("effective".into(), settings_result(&q.effective));
                Value::Object(m)
            }
            "list_queues" => {
                let prefix = a.str("name_prefix")?;
                let terms = a.strs("tag");
                let terms: Vec<&str> = terms.iter().map(String::as_str).collect();
                let mut qs: Vec<QueueStats> = c.list_queues_by_tag(&terms).await?.into_iter().filter(|q| q.name.starts_with(&prefix)).collect();
                qs.sort_by(|x, y| x.name.cmp(&y.name));
                json!({ "queues": qs.iter().map(|q| Value::Object(stats_result(q))).collect::<Vec<_>>() })
            }
            "delete_queue" => {
                let r = c.delete_queue(&a.str("name")?, a.boolean("force")?).await?;
                json!({"jobs_removed": r.jobs, "dead_letters_removed": r.dead_letters})
            }
            "purge_queue" => {
                let target = match a.str("target")?.as_str() {
                    "waiting" => PurgeTarget::Waiting,
                    "dead_letters" => PurgeTarget::DeadLetters,
                    other => return Err(Mismatch(format!("argument target: want waiting or dead_letters, got {}", other)).into()),
                };
                let r = c.purge_queue(&a.str("name")?, target).await?;
                json!({"jobs_removed": r.jobs, "dead_letters_removed": r.dead_letters})
            }
            "pause_queue" => {
                c.pause_queue(&a.str("queue")?).await?;
                json!({})
            }
            "resume_queue" => {
                c.resume_queue(&a.str("queue")?).await?;
                json!({})
            }
            "preview_redrive" => json!({ "matching": c.preview_redrive(&redrive(&a)?, 0).await?.matching }),
            "start_redrive" => task_result(&c.start_redrive(&redrive(&a)?).await?),
            "get_redrive" => task_result(&c.get_redrive(a.num("id")?).await?),
            "list_redrives" => {
                let queue = a.str("queue")?;
                let mut tasks: Vec<RedriveTask> = c.list_redrives().await?.into_iter().filter(|t| t.options.selection.queue == queue).collect();
                tasks.sort_by_key(|t| t.id);
                json!({ "tasks": tasks.iter().map(task_result).collect::<Vec<_>>() })
            }
            "pause_redrive" => task_result(&c.pause_redrive(a.num("id")?).await?),
            "resume_redrive" => task_result(&c.resume_redrive(a.num("id")?).await?),
            "cancel_redrive" => task_result(&c.cancel_redrive(a.num("id")?).await?),
            "enqueue_batch" => {
                let items = a.0.get("jobs").and_then(Value::as_array).ok_or_else(|| Mismatch("argument jobs: want an array of enqueue arguments".into()))?;
                // An item EnqueueRequest or Priority refuses to build fails
                // in its place, as the Go client's batch answers it; the
                // rest go in one batch. A batch whose jobs wait for each
                // other is applied whole, as the SDK's enqueue_batch
                // answers a client-side refusal in it: the call fails.
                let whole = items.iter().any(|i| i.get("after").and_then(Value::as_array).map_or(false, |a| !a.is_empty()));
                let mut slots: Vec<Option<Result<EnqueueResult, Error>>> = Vec::new();
                let mut reqs = Vec::new();
                for item in items {
                    let m = item.as_object().ok_or_else(|| Mismatch(format!("argument jobs: {} is not an object", item)))?;
                    match enqueue_request(&Args(m))? {
                        Ok(req) => {
                            reqs.push(req);
                            slots.push(None);
                        }
                        Err(refused) if whole => return Err(refused.into()),
                        Err(refused) => slots.push(Some(Err(refused))),
                    }
                }
                let mut sent = if reqs.is_empty() { Vec::new() } else { c.enqueue_batch(reqs).await? }.into_iter();
                let mut results = Vec::new();
                for slot in slots {
                    let r = match slot {
                        Some(refused) => refused,
                        None => sent.next().ok_or_else(|| Mismatch("enqueue_batch answered fewer results than items".into()))?,
                    };
                    results.push(batch_item(&r));
                }
                json!({ "results": results })
            }
            "ack_batch" => {
                let ids = a.ids("job_ids")?;
                let mut ctxs = Vec::new();
                for id in &ids {
                    let m: Map<String, Value> = [("job_id".to_string(), json!(id))].into_iter().collect();
                    ctxs.push(self.delivery(&Args(&m))?.ctx);
                }
                let rs = c.ack_batch(&ctxs).await?;
                let results: Vec<Value> = ids.iter().zip(&rs).map(|(id, r)| json!({"job_id": id, "error": r.as_ref().err().map(error_kind)})).collect();
                json!({ "results": results })
            }
            "drain_dead_letters" => {
                let queue = if a.has("queue") { Some(a.str("queue")?) } else { None };
                let records = c.drain_dead_letters(queue.as_deref(), a.num("max")? as u32).await?;
                json!({ "records": records.iter().map(dead_letter_result).collect::<Vec<_>>() })
            }
            "create_schedule" => {
                let template = JobTemplate::new(a.str("queue")?, a.str("job_type")?).with_payload(a.str("payload")?.into_bytes());
                let def = if a.has("cron") {
                    ScheduleDefinition::cron(a.str("name")?, a.str("cron")?, template)
                } else {
                    ScheduleDefinition::every(a.str("name")?, ms(a.num("interval_ms")?), template)
                };
                let def = def.with_time_zone(a.str("time_zone")?).with_paused(a.boolean("paused")?);
                schedule_result(&c.create_schedule(&def).await?)
            }
            "get_schedule" => schedule_result(&c.get_schedule(&a.str("name")?, 0).await?),
            "pause_schedule" => schedule_result(&c.pause_schedule(&a.str("name")?).await?),
            "resume_schedule" => schedule_result(&c.resume_schedule(&a.str("name")?).await?),
            "delete_schedule" => {
                c.delete_schedule(&a.str("name")?).await?;
                json!({})
            }
            "list_schedules" => {
                let prefix = a.str("name_prefix")?;
                let mut ss: Vec<Schedule> = c.list_schedules(0).await?.into_iter().filter(|s| s.name().starts_with(&prefix)).collect();
                ss.sort_by(|x, y| x.name().cmp(y.name()));
                json!({ "schedules": ss.iter().map(schedule_result).collect::<Vec<_>>() })
            }
            other => return Err(Mismatch(format!("unknown op {:?}", other)).into()),
        };
        Ok(v)
    }
}

async fn attempt(d: &mut Driver<'_>, st: &Step, args: &Map<String, Value>, expect: &Option<Value>, expect_err: &Option<(String, Option<String>)>) -> Result<Value, Mismatch> {
    match d.call(&st.op, args).await {
        Err(CallError::Runner(m)) => Err(m),
        Err(CallError::Step(e)) => match expect_err {
            None => mismatch(format!("unexpected error: {}", e.describe())),
            Some((kind, _)) if kind != e.kind => mismatch(format!("expected error {}, got {}", kind, e.describe())),
            Some((kind, Some(field))) if !field.is_empty() && *field != e.field => mismatch(format!("expected error {} naming field {:?}, got {}", kind, field, e.describe())),
            Some(_) => Ok(json!({})),
        },
        Ok(result) => {
            if let Some((kind, _)) = expect_err {
                return mismatch(format!("expected error {}, got result {}", kind, result));
            }
            if let Some(e) = expect {
                matches("result", e, &result)?;
            }
            Ok(result)
        }
    }
}

async fn run_step(d: &mut Driver<'_>, st: &Step, vars: &mut HashMap<String, Value>) -> Result<(), Mismatch> {
    if st.expect.is_some() && st.error.is_some() {
        return mismatch("a step expects a result or an error, not both");
    }
    let args = match substitute(&Value::Object(st.args.clone()), vars)? {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let expect = match &st.expect {
        Some(e) => Some(substitute(e, vars)?),
        None => None,
    };
    let expect_err = match &st.error {
        Some((kind, field)) => {
            let field = match field {
                Some(f) => Some(substitute(&Value::String(f.clone()), vars)?.as_str().unwrap_or("").to_string()),
                None => None,
            };
            Some((kind.clone(), field))
        }
        None => None,
    };
    let deadline = Instant::now() + ms(st.within_ms);
    loop {
        match attempt(d, st, &args, &expect, &expect_err).await {
            Ok(result) => {
                for (name, path) in &st.save {
                    vars.insert(name.clone(), lookup(&result, path)?);
                }
                return Ok(());
            }
            Err(m) if st.within_ms == 0 => return Err(m),
            Err(m) if Instant::now() > deadline => return mismatch(format!("not within {} ms: {}", st.within_ms, m.0)),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Runs the steps in order; the error names the first that fails.
async fn run_scenario(c: &SeppClient, sc: &Scenario, run: &str) -> Result<(), Mismatch> {
    let mut d = Driver { c, deliveries: HashMap::new() };
    let mut vars = HashMap::new();
    vars.insert("run".to_string(), Value::String(run.to_string()));
    for (i, st) in sc.steps.iter().enumerate() {
        if let Err(m) = run_step(&mut d, st, &mut vars).await {
            return mismatch(format!("step {} ({}): {}", i + 1, st.op, m.0));
        }
    }
    Ok(())
}

fn unique(name: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("rs-{}-{}", name, nanos)
}

/// Every scenario, one after another (each reports its own failure; the
/// test fails if any did).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios() {
    let scenarios = load_scenarios();
    assert!(scenarios.len() >= 15, "only {} scenarios in {}", scenarios.len(), scenario_dir().display());
    let client = common::shared().client().await;
    let mut failed = Vec::new();
    for (name, sc) in &scenarios {
        match run_scenario(&client, sc, &unique(name)).await {
            Ok(()) => println!("ok   {}", name),
            Err(m) => {
                println!("FAIL {}: {}: {}", name, sc.description, m.0);
                failed.push(format!("{}: {}", name, m.0));
            }
        }
    }
    assert!(failed.is_empty(), "{} of {} scenarios failed:\n{}", failed.len(), scenarios.len(), failed.join("\n"));
    println!("{} scenarios passed", scenarios.len());
}

/// The runner fails a scenario that expects the wrong thing, naming the
/// step and what differed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runner_reports_mismatch() {
    let client = common::shared().client().await;
    let cases: [(&str, &str, &str); 8] = [
        (
            "wrong_result_field",
            r#"[{"op": "enqueue", "args": {"queue": "${run}-q", "job_type": "t"}},
                {"op": "reserve", "args": {"queue": "${run}-q"}, "expect": {"jobs": [{"job_type": "not-t"}]}}]"#,
            r#"step 2 (reserve): result.jobs[0].job_type: expected "not-t", got "t""#,
        ),
        (
            "wrong_length",
            r#"[{"op": "reserve", "args": {"queue": "${run}-q"}, "expect": {"jobs": [{"job_type": "t"}]}}]"#,
            "step 1 (reserve): result.jobs: expected 1 elements, got 0",
        ),
        (
            "error_that_does_not_come",
            r#"[{"op": "create_queue", "args": {"name": "${run}-q"}, "error": {"kind": "already_exists"}}]"#,
            "step 1 (create_queue): expected error already_exists, got result",
        ),
        (
            "other_error",
            r#"[{"op": "get_job", "args": {"job_id": 999999999}, "error": {"kind": "wrong_state"}}]"#,
            "step 1 (get_job): expected error wrong_state, got not_found",
        ),
        ("unexpected_error", r#"[{"op": "get_job", "args": {"job_id": 999999999}}]"#, "step 1 (get_job): unexpected error: not_found"),
        (
            "not_within",
            r#"[{"op": "reserve", "args": {"queue": "${run}-q"}, "within_ms": 300, "expect": {"jobs": [{"job_type": "t"}]}}]"#,
            "step 1 (reserve): not within 300 ms: result.jobs: expected 1 elements, got 0",
        ),
        ("unknown_op", r#"[{"op": "enqueue_many", "args": {}}]"#, r#"step 1 (enqueue_many): unknown op "enqueue_many""#),
        ("unknown_variable", r#"[{"op": "get_job", "args": {"job_id": "${nothing}"}}]"#, "step 1 (get_job): unknown variable ${nothing}"),
    ];
    for (name, steps, want) in cases {
        let sc = parse_scenario(&format!(r#"{{"description": "bad", "steps": {}}}"#, steps)).expect("a well-formed bad scenario");
        match run_scenario(&client, &sc, &unique(name)).await {
            Ok(()) => panic!("{}: the runner passed a scenario that must fail", name),
            Err(m) => assert!(m.0.starts_with(want), "{}:\ngot  {}\nwant {}...", name, m.0, want),
        }
    }
}
