//! The crate's one error type, built from the server's status code and the
//! details it attached (see `rpc/status.go` in the server, which decides
//! them), so a caller matches on what happened instead of parsing text.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::pb;

/// The Connect (gRPC) status codes, as the protocol names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    Canceled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
}

impl Code {
    /// The code of Connect's error JSON (`"invalid_argument"`); unknown
    /// names are [`Code::Unknown`].
    pub fn from_connect(name: &str) -> Code {
        match name {
            "canceled" => Code::Canceled,
            "invalid_argument" => Code::InvalidArgument,
            "deadline_exceeded" => Code::DeadlineExceeded,
            "not_found" => Code::NotFound,
            "already_exists" => Code::AlreadyExists,
            "permission_denied" => Code::PermissionDenied,
            "resource_exhausted" => Code::ResourceExhausted,
            "failed_precondition" => Code::FailedPrecondition,
            "aborted" => Code::Aborted,
            "out_of_range" => Code::OutOfRange,
            "unimplemented" => Code::Unimplemented,
            "internal" => Code::Internal,
            "unavailable" => Code::Unavailable,
            "data_loss" => Code::DataLoss,
            "unauthenticated" => Code::Unauthenticated,
            _ => Code::Unknown,
        }
    }

    /// The code Connect assigns an HTTP status that came without error
    /// JSON (a proxy's page, say).
    pub fn from_http(status: u16) -> Code {
        match status {
            400 => Code::InvalidArgument,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            408 => Code::DeadlineExceeded,
            409 => Code::Aborted,
            412 => Code::FailedPrecondition,
            413 => Code::ResourceExhausted,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }

    /// The protocol's name of the code.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Canceled => "canceled",
            Code::Unknown => "unknown",
            Code::InvalidArgument => "invalid_argument",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::NotFound => "not_found",
            Code::AlreadyExists => "already_exists",
            Code::PermissionDenied => "permission_denied",
            Code::ResourceExhausted => "resource_exhausted",
            Code::FailedPrecondition => "failed_precondition",
            Code::Aborted => "aborted",
            Code::OutOfRange => "out_of_range",
            Code::Unimplemented => "unimplemented",
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::DataLoss => "data_loss",
            Code::Unauthenticated => "unauthenticated",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed call. `op` names the call ("enqueue", "nack", ...), `message`
/// is the server's (or the client's) own text; the variant says what it
/// means and carries the server's details.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Error {
    /// A field broke a rule; nothing changed. `field` is e.g. `"priority"`
    /// or `"jobs[3].queue"`, `limit` e.g. `"0..9"` (empty when none).
    InvalidArgument {
        op: &'static str,
        field: String,
        limit: String,
        message: String,
    },
    /// `scheduled_at` lies beyond the queue's schedule horizon; nothing
    /// was added.
    ScheduledTooFar {
        op: &'static str,
        queue: String,
        /// The queue's max_schedule_horizon_ms.
        horizon: Duration,
        /// The `scheduled_at` asked for.
        requested: SystemTime,
        /// The latest `scheduled_at` the server would have accepted.
        latest_allowed: SystemTime,
        message: String,
    },
    /// No such job, record, queue or schedule. `field` names the request
    /// field that named it (for example `name`; empty when the server named
    /// none).
    NotFound {
        op: &'static str,
        field: String,
        message: String,
    },
    /// Another job of the queue holds the uniqueness key and the enqueue
    /// asked to be refused ([`UniqueOptions::with_refuse`](crate::UniqueOptions::with_refuse));
    /// nothing was added. `job_id` is the holding job, `queue` its queue.
    UniqueConflict {
        op: &'static str,
        queue: String,
        job_id: u64,
        message: String,
    },
    /// What the call creates exists already (a schedule or queue of that
    /// name). `field` names the request field that named it (empty when
    /// the server named none).
    AlreadyExists {
        op: &'static str,
        field: String,
        message: String,
    },
    /// The delivery's lease is not the job's current one (it expired, or
    /// the job was redelivered, acked or released). Nothing changed.
    LeaseLost { op: &'static str, message: String },
    /// An operator cancelled the job while this delivery held its lease:
    /// the lease was revoked, not lost (see [`Error::is_lease_lost`], true
    /// for both). A cancel that deleted the job leaves no trace, and its
    /// lease reads as [`Error::LeaseLost`].
    JobCancelled { op: &'static str, message: String },
    /// The job's state does not allow the operation.
    WrongState { op: &'static str, message: String },
    /// The queue is at its max length; nothing was added.
    QueueFull { op: &'static str, message: String },
    /// Another server limit (memory budget, full disk) refused the call;
    /// nothing was added.
    ResourceExhausted { op: &'static str, message: String },
    /// No leader answered within the retry budget. `leader_id` and
    /// `leader_addr` are what the last node that answered named (empty
    /// when it knew none).
    Unavailable {
        op: &'static str,
        message: String,
        leader_id: String,
        leader_addr: String,
    },
    /// The call may or may not have taken effect, and the client could not
    /// settle which (or, for a drain, must not retry). Never treat it as
    /// success or as a clean failure. `cause` is the last failure.
    UnknownOutcome {
        op: &'static str,
        message: String,
        cause: Box<Error>,
    },
    PermissionDenied { op: &'static str, message: String },
    Unauthenticated { op: &'static str, message: String },
    /// The call's own deadline passed, or the worker stopped it.
    Canceled { op: &'static str, message: String },
    /// The server failed in a way it did not classify, or answered
    /// something this client cannot read.
    Internal {
        op: &'static str,
        code: Code,
        message: String,
    },
}

impl Error {
    /// The call that failed.
    pub fn op(&self) -> &'static str {
        match self {
            Error::InvalidArgument { op, .. }
            | Error::ScheduledTooFar { op, .. }
            | Error::NotFound { op, .. }
            | Error::UniqueConflict { op, .. }
            | Error::AlreadyExists { op, .. }
            | Error::LeaseLost { op, .. }
            | Error::JobCancelled { op, .. }
            | Error::WrongState { op, .. }
            | Error::QueueFull { op, .. }
            | Error::ResourceExhausted { op, .. }
            | Error::Unavailable { op, .. }
            | Error::UnknownOutcome { op, .. }
            | Error::PermissionDenied { op, .. }
            | Error::Unauthenticated { op, .. }
            | Error::Canceled { op, .. }
            | Error::Internal { op, .. } => op,
        }
    }

    /// The text of the error without the op.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArgument { message, .. }
            | Error::ScheduledTooFar { message, .. }
            | Error::NotFound { message, .. }
            | Error::UniqueConflict { message, .. }
            | Error::AlreadyExists { message, .. }
            | Error::LeaseLost { message, .. }
            | Error::JobCancelled { message, .. }
            | Error::WrongState { message, .. }
            | Error::QueueFull { message, .. }
            | Error::ResourceExhausted { message, .. }
            | Error::Unavailable { message, .. }
            | Error::UnknownOutcome { message, .. }
            | Error::PermissionDenied { message, .. }
            | Error::Unauthenticated { message, .. }
            | Error::Canceled { message, .. }
            | Error::Internal { message, .. } => message,
        }
    }

    /// Whether the delivery's lease is gone: [`Error::LeaseLost`] or
    /// [`Error::JobCancelled`].
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, Error::LeaseLost { .. } | Error::JobCancelled { .. })
    }

    /// The status code the error stands for.
    pub fn code(&self) -> Code {
        match self {
            Error::InvalidArgument { .. } | Error::ScheduledTooFar { .. } => Code::InvalidArgument,
            Error::NotFound { .. } => Code::NotFound,
            Error::UniqueConflict { .. } | Error::AlreadyExists { .. } => Code::AlreadyExists,
            Error::LeaseLost { .. } | Error::JobCancelled { .. } | Error::WrongState { .. } => Code::FailedPrecondition,
            Error::QueueFull { .. } | Error::ResourceExhausted { .. } => Code::ResourceExhausted,
            Error::Unavailable { .. } => Code::Unavailable,
            Error::UnknownOutcome { .. } => Code::Unknown,
            Error::PermissionDenied { .. } => Code::PermissionDenied,
            Error::Unauthenticated { .. } => Code::Unauthenticated,
            Error::Canceled { .. } => Code::Canceled,
            Error::Internal { code, .. } => *code,
        }
    }

    /// A client-side check of a request field, worded as the server words
    /// its own.
    pub(crate) fn invalid(op: &'static str, field: &str, limit: &str, description: &str) -> Error {
        Error::InvalidArgument {
            op,
            field: field.to_string(),
            limit: limit.to_string(),
            message: format!("{}: {}", field, description),
        }
    }

    pub(crate) fn internal(op: &'static str, message: impl Into<String>) -> Error {
        Error::Internal {
            op,
            code: Code::Internal,
            message: message.into(),
        }
    }

    pub(crate) fn unknown_outcome(op: &'static str, why: &str, cause: Error) -> Error {
        Error::UnknownOutcome {
            op,
            message: format!("{}: {}", why, cause.message()),
            cause: Box::new(cause),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ScheduledTooFar {
                op, horizon, message, ..
            } => write!(
                f,
                "sepp {}: scheduled too far (horizon {} ms): {}",
                op,
                horizon.as_millis(),
                message
            ),
            Error::UnknownOutcome { op, message, .. } => write!(f, "sepp {}: unknown outcome: {}", op, message),
            other => write!(f, "sepp {}: {}: {}", other.op(), other.code(), other.message()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::UnknownOutcome { cause, .. } => Some(cause.as_ref()),
            _ => None,
        }
    }
}

/// One detail of a server error, decoded from the binary `value` of
/// Connect's error JSON.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Detail {
    FieldViolation(pb::FieldViolation),
    ScheduledTooFar(pb::ScheduledTooFar),
    NotLeader(pb::NotLeader),
    UnknownOutcome(pb::UnknownOutcome),
    /// google.rpc.PreconditionFailure: the violations' types ("LEASE",
    /// "STATE").
    Precondition(Vec<String>),
    /// google.rpc.ResourceInfo: what a conflict or a limit is about (for a
    /// unique conflict, resource_type "job", its id and its queue).
    Resource(ResourceInfo),
}

/// google.rpc.ResourceInfo.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ResourceInfo {
    #[prost(string, tag = "1")]
    pub(crate) resource_type: String,
    #[prost(string, tag = "2")]
    pub(crate) resource_name: String,
    #[prost(string, tag = "3")]
    pub(crate) owner: String,
    #[prost(string, tag = "4")]
    pub(crate) description: String,
}

/// google.rpc.PreconditionFailure, the part of it this client reads.
#[derive(Clone, PartialEq, prost::Message)]
struct PreconditionFailure {
    #[prost(message, repeated, tag = "1")]
    violations: Vec<PreconditionViolation>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PreconditionViolation {
    #[prost(string, tag = "1")]
    r#type: String,
}

impl Detail {
    /// Decodes one detail; `None` for types this client does not read
    /// (their code and message still stand) or bytes that do not decode.
    pub(crate) fn decode(type_name: &str, value: &[u8]) -> Option<Detail> {
        use prost::Message;
        let name = type_name.rsplit('/').next().unwrap_or(type_name);
        match name {
            "sepp.v1.FieldViolation" => pb::FieldViolation::decode(value).ok().map(Detail::FieldViolation),
            "sepp.v1.ScheduledTooFar" => pb::ScheduledTooFar::decode(value).ok().map(Detail::ScheduledTooFar),
            "sepp.v1.NotLeader" => pb::NotLeader::decode(value).ok().map(Detail::NotLeader),
            "sepp.v1.UnknownOutcome" => pb::UnknownOutcome::decode(value).ok().map(Detail::UnknownOutcome),
            "google.rpc.PreconditionFailure" => PreconditionFailure::decode(value)
                .ok()
                .map(|p| Detail::Precondition(p.violations.into_iter().map(|v| v.r#type).collect())),
            "google.rpc.ResourceInfo" => ResourceInfo::decode(value).ok().map(Detail::Resource),
            _ => None,
        }
    }
}

/// The ops fenced by a lease token: for them NotFound and
/// FailedPrecondition mean the lease is gone.
fn is_lease_op(op: &str) -> bool {
    matches!(op, "ack" | "nack" | "release" | "extend lease")
}

/// Builds the typed error of a server status, as the Go client classifies
/// it.
pub(crate) fn from_status(op: &'static str, code: Code, message: String, details: &[Detail]) -> Error {
    let field_violation = details.iter().find_map(|d| match d {
        Detail::FieldViolation(v) => Some(v),
        _ => None,
    });
    match code {
        Code::InvalidArgument | Code::OutOfRange => {
            let too_far = details.iter().find_map(|d| match d {
                Detail::ScheduledTooFar(s) => Some(s),
                _ => None,
            });
            if let Some(s) = too_far {
                if let (Some(requested), Some(latest)) = (
                    s.requested_at.clone().and_then(crate::types::system_time),
                    s.latest_allowed.clone().and_then(crate::types::system_time),
                ) {
                    return Error::ScheduledTooFar {
                        op,
                        queue: s.queue.clone(),
                        horizon: Duration::from_millis(s.horizon_ms.max(0) as u64),
                        requested,
                        latest_allowed: latest,
                        message,
                    };
                }
            }
            let (field, limit) = field_violation
                .map(|v| (v.field.clone(), v.limit.clone()))
                .unwrap_or_default();
            Error::InvalidArgument {
                op,
                field,
                limit,
                message,
            }
        }
        Code::AlreadyExists => {
            let holder = details.iter().find_map(|d| match d {
                Detail::Resource(r) if r.resource_type == "job" => r.resource_name.parse::<u64>().ok().map(|id| (r.owner.clone(), id)),
                _ => None,
            });
            match holder {
                Some((queue, job_id)) => Error::UniqueConflict { op, queue, job_id, message },
                None => Error::AlreadyExists {
                    op,
                    field: field_violation.map(|v| v.field.clone()).unwrap_or_default(),
                    message,
                },
            }
        }
        Code::NotFound if is_lease_op(op) => Error::LeaseLost { op, message },
        Code::NotFound => Error::NotFound {
            op,
            field: field_violation.map(|v| v.field.clone()).unwrap_or_default(),
            message,
        },
        Code::FailedPrecondition => {
            let cancelled = details.iter().any(|d| match d {
                Detail::Precondition(types) => types.iter().any(|t| t == "LEASE_CANCELLED"),
                _ => false,
            });
            if cancelled {
                return Error::JobCancelled { op, message };
            }
            // The cluster (VERSION) or the queue (QUEUE) refused a feature
            // of the request, an ack's result: the lease still holds.
            let refused = details.iter().any(|d| match d {
                Detail::Precondition(types) => types.iter().any(|t| t == "VERSION" || t == "QUEUE"),
                _ => false,
            });
            if refused {
                return Error::WrongState { op, message };
            }
            let lease = details.iter().any(|d| match d {
                Detail::Precondition(types) => types.iter().any(|t| t.eq_ignore_ascii_case("lease")),
                _ => false,
            });
            if lease || is_lease_op(op) {
                Error::LeaseLost { op, message }
            } else {
                Error::WrongState { op, message }
            }
        }
        Code::ResourceExhausted => {
            let full = field_violation.map_or(false, |v| v.field == "queue" || v.limit.contains("max_length"))
                || message.contains("max_length")
                || message.contains("max_queue_length")
                || message.to_lowercase().contains("queue full");
            if full {
                Error::QueueFull { op, message }
            } else {
                Error::ResourceExhausted { op, message }
            }
        }
        Code::Unavailable => {
            let (leader_id, leader_addr) = details
                .iter()
                .find_map(|d| match d {
                    Detail::NotLeader(n) => Some((n.leader_id.clone(), n.leader_grpc_addr.clone())),
                    _ => None,
                })
                .unwrap_or_default();
            Error::Unavailable {
                op,
                message,
                leader_id,
                leader_addr,
            }
        }
        Code::Aborted => {
            let reason = details
                .iter()
                .find_map(|d| match d {
                    Detail::UnknownOutcome(u) => Some(u.reason.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| message.clone());
            Error::UnknownOutcome {
                op,
                message,
                cause: Box::new(Error::Internal {
                    op,
                    code: Code::Aborted,
                    message: reason,
                }),
            }
        }
        Code::PermissionDenied => Error::PermissionDenied { op, message },
        Code::Unauthenticated => Error::Unauthenticated { op, message },
        Code::Canceled | Code::DeadlineExceeded => Error::Canceled { op, message },
        other => Error::Internal {
            op,
            code: other,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn already_exists_is_a_unique_conflict_when_a_job_holds_the_key() {
        let job = |name: &str| {
            Detail::Resource(ResourceInfo {
                resource_type: "job".into(),
                resource_name: name.into(),
                owner: "reports".into(),
                description: "held".into(),
            })
        };
        let cases = vec![
            ("a holding job", vec![job("42")], Some(("reports".to_string(), 42u64))),
            ("no detail (a schedule's name)", vec![], None),
            ("an id that is no number", vec![job("x")], None),
            (
                "another resource",
                vec![Detail::Resource(ResourceInfo {
                    resource_type: "schedule".into(),
                    resource_name: "7".into(),
                    ..ResourceInfo::default()
                })],
                None,
            ),
        ];
        for (name, details, want) in cases {
            let err = from_status("enqueue", Code::AlreadyExists, "m".into(), &details);
            assert_eq!(err.code(), Code::AlreadyExists, "{}", name);
            match (err, want) {
                (Error::UniqueConflict { queue, job_id, .. }, Some(w)) => assert_eq!((queue, job_id), w, "{}", name),
                (Error::AlreadyExists { .. }, None) => {}
                (got, want) => panic!("{}: got {:?}, want {:?}", name, got, want),
            }
        }
    }

    #[test]
    fn cancelled_lease_is_job_cancelled_not_lease_lost() {
        let pf = |t: &str| vec![Detail::Precondition(vec![t.to_string()])];
        let cases = vec![
            ("cancelled", "extend lease", pf("LEASE_CANCELLED"), true),
            ("cancelled, an ack", "ack", pf("LEASE_CANCELLED"), true),
            ("lost", "extend lease", pf("LEASE"), false),
            ("lost, no detail", "ack", vec![], false),
        ];
        for (name, op, details, want_cancelled) in cases {
            let err = from_status(op, Code::FailedPrecondition, "m".into(), &details);
            assert!(err.is_lease_lost(), "{}: {:?} is not a lost lease", name, err);
            assert_eq!(matches!(err, Error::JobCancelled { .. }), want_cancelled, "{}: {:?}", name, err);
            assert_eq!(err.code(), Code::FailedPrecondition, "{}", name);
        }
    }

    #[test]
    fn resource_info_decodes() {
        use prost::Message;
        let r = ResourceInfo {
            resource_type: "job".into(),
            resource_name: "9".into(),
            owner: "q".into(),
            description: "d".into(),
        };
        assert_eq!(Detail::decode("type.googleapis.com/google.rpc.ResourceInfo", &r.encode_to_vec()), Some(Detail::Resource(r)));
    }

    #[test]
    fn not_found_and_already_exists_name_the_field() {
        let named = vec![Detail::FieldViolation(pb::FieldViolation {
            field: "name".into(),
            ..pb::FieldViolation::default()
        })];
        for code in [Code::NotFound, Code::AlreadyExists] {
            match from_status("get queue", code, "m".into(), &named) {
                Error::NotFound { field, .. } | Error::AlreadyExists { field, .. } => assert_eq!(field, "name", "{:?}", code),
                other => panic!("{:?}: {:?}", code, other),
            }
            match from_status("get queue", code, "m".into(), &[]) {
                Error::NotFound { field, .. } | Error::AlreadyExists { field, .. } => assert_eq!(field, "", "{:?}", code),
                other => panic!("{:?}: {:?}", code, other),
            }
        }
    }
}
