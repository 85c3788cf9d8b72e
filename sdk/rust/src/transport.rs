//! The wire: one Connect unary call (binary protobuf, HTTP/1.1 POST) to one
//! node. Everything the client knows about HTTP lives here, so another
//! transport (gRPC over tonic, where it is packaged) replaces this module
//! alone.
//!
//! Connect rather than gRPC because the API port already answers it on the
//! same listener, with the same interceptors and error details (see
//! `rpc/apiport.go`), and because a unary Connect call is a plain request
//! and response: no HTTP/2 trailers, no length-prefixed frames, nothing the
//! client must get right beyond what hyper's HTTP/1.1 client already does.
//! A successful answer is the response message's bytes; a failed one is
//! JSON `{"code", "message", "details": [{"type", "value"}]}` whose values
//! are the same protobuf details a gRPC status carries.

use std::time::Duration;

use bytes::Bytes;
use hyper::client::HttpConnector;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Body, Client, Method, Request};

use crate::error::{Code, Detail};

/// The response header a follower sets on a call it forwarded to the
/// leader (`rpc/forward.go`).
const LEADER_HEADER: &str = "sepp-leader-grpc-addr";

/// Why one attempt did not produce an answer.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// The server answered with an error status.
    Status {
        code: Code,
        message: String,
        details: Vec<Detail>,
    },
    /// No connection could be made: the request never left.
    NotSent(String),
    /// The request may have reached the server, but no answer came (reset,
    /// timeout, a broken body).
    Lost(String),
}

/// A successful answer: the response message, and the leader a forwarding
/// follower named, if one did.
pub(crate) struct Answer {
    pub(crate) body: Bytes,
    pub(crate) leader_hint: Option<String>,
}

#[derive(Clone)]
pub(crate) struct Transport {
    http: Client<HttpConnector, Body>,
    token: Option<HeaderValue>,
}

impl Transport {
    pub(crate) fn new(token: Option<&str>) -> Result<Transport, String> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(5)));
        let token = match token {
            Some(t) => Some(HeaderValue::from_str(&format!("Bearer {}", t)).map_err(|_| "token: not a valid header value".to_string())?),
            None => None,
        };
        Ok(Transport {
            http: Client::builder().pool_idle_timeout(Duration::from_secs(30)).build(connector),
            token,
        })
    }

    /// POSTs body to `base/path` (base is `http://host:port`) and waits at
    /// most timeout for the whole answer.
    pub(crate) async fn unary(&self, base: &str, path: &str, body: Vec<u8>, timeout: Duration) -> Result<Answer, AttemptError> {
        let uri = format!("{}/{}", base, path);
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(&uri)
            .header(CONTENT_TYPE, "application/proto")
            .header("connect-protocol-version", "1")
            .header("connect-timeout-ms", timeout.as_millis().to_string());
        if let Some(t) = &self.token {
            req = req.header(AUTHORIZATION, t.clone());
        }
        let req = req
            .body(Body::from(body))
            .map_err(|e| AttemptError::NotSent(format!("{}: {}", uri, e)))?;
        let exchange = async {
            let resp = self.http.request(req).await.map_err(|e| {
                if e.is_connect() {
                    AttemptError::NotSent(format!("{}: {}", base, e))
                } else {
                    AttemptError::Lost(format!("{}: {}", base, e))
                }
            })?;
            let status = resp.status();
            let hint = resp
                .headers()
                .get(LEADER_HEADER)
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(str::to_string);
            let bytes = hyper::body::to_bytes(resp.into_body())
                .await
                .map_err(|e| AttemptError::Lost(format!("{}: reading the answer: {}", base, e)))?;
            if status.is_success() {
                Ok(Answer { body: bytes, leader_hint: hint })
            } else {
                Err(parse_error(status.as_u16(), &bytes))
            }
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(AttemptError::Lost(format!("{}: no answer within {} ms", base, timeout.as_millis()))),
        }
    }
}

/// Reads Connect's error JSON; an answer without it (a proxy's page) gets
/// the code Connect assigns its HTTP status.
pub(crate) fn parse_error(http_status: u16, body: &[u8]) -> AttemptError {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let code = parsed.as_ref().and_then(|v| v.get("code")).and_then(|c| c.as_str());
    let code = match code {
        Some(c) => Code::from_connect(c),
        None => {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            return AttemptError::Status {
                code: Code::from_http(http_status),
                message: format!("HTTP {}: {}", http_status, text),
                details: Vec::new(),
            };
        }
    };
    let parsed = parsed.unwrap_or_default();
    let message = parsed.get("message").and_then(|m| m.as_str()).unwrap_or("").to_string();
    let mut details = Vec::new();
    if let Some(list) = parsed.get("details").and_then(|d| d.as_array()) {
        for d in list {
            let type_name = d.get("type").and_then(|t| t.as_str()).unwrap_or("");
            let value = d.get("value").and_then(|t| t.as_str()).unwrap_or("");
            // Connect sends standard base64 and may leave the padding off.
            if let Ok(bytes) = base64::decode_config(value.trim_end_matches('='), base64::STANDARD_NO_PAD) {
                if let Some(detail) = Detail::decode(type_name, &bytes) {
                    details.push(detail);
                }
            }
        }
    }
    AttemptError::Status { code, message, details }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb;
    use prost::Message;

    fn b64(m: &impl Message) -> String {
        base64::encode_config(m.encode_to_vec(), base64::STANDARD_NO_PAD)
    }

    #[test]
    fn parse_error_cases() {
        let not_leader = pb::NotLeader {
            leader_id: "sepp-2".into(),
            leader_grpc_addr: "127.0.0.1:50052".into(),
            leader_http_addr: String::new(),
        };
        let padded = base64::encode(not_leader.encode_to_vec());
        struct Case {
            name: &'static str,
            status: u16,
            body: String,
            code: Code,
            details: Vec<Detail>,
        }
        let cases = vec![
            Case {
                name: "not leader, unpadded",
                status: 503,
                body: format!(r#"{{"code":"unavailable","message":"not the leader","details":[{{"type":"sepp.v1.NotLeader","value":"{}"}}]}}"#, b64(&not_leader)),
                code: Code::Unavailable,
                details: vec![Detail::NotLeader(not_leader.clone())],
            },
            Case {
                name: "not leader, padded",
                status: 503,
                body: format!(r#"{{"code":"unavailable","message":"x","details":[{{"type":"sepp.v1.NotLeader","value":"{}"}}]}}"#, padded),
                code: Code::Unavailable,
                details: vec![Detail::NotLeader(not_leader)],
            },
            Case {
                name: "unknown detail type dropped",
                status: 400,
                body: r#"{"code":"invalid_argument","message":"m","details":[{"type":"google.rpc.RetryInfo","value":"CgIIAQ"}]}"#.into(),
                code: Code::InvalidArgument,
                details: vec![],
            },
            Case {
                name: "undecodable value dropped",
                status: 400,
                body: r#"{"code":"invalid_argument","message":"m","details":[{"type":"sepp.v1.FieldViolation","value":"!!!"}]}"#.into(),
                code: Code::InvalidArgument,
                details: vec![],
            },
            Case {
                name: "proxy page",
                status: 502,
                body: "<html>bad gateway</html>".into(),
                code: Code::Unavailable,
                details: vec![],
            },
        ];
        for c in cases {
            match parse_error(c.status, c.body.as_bytes()) {
                AttemptError::Status { code, details, .. } => {
                    assert_eq!(code, c.code, "{}", c.name);
                    assert_eq!(details, c.details, "{}", c.name);
                }
                other => panic!("{}: {:?}", c.name, other),
            }
        }
    }

    /// Stable Rust has no fuzzer offline: every truncation and a run of
    /// byte flips and random bodies of a real error answer must decode to
    /// some status without a panic.
    #[test]
    fn parse_error_survives_mangled_answers() {
        let detail = pb::ScheduledTooFar {
            queue: "q".into(),
            horizon_ms: 1000,
            requested_at: None,
            latest_allowed: None,
        };
        let body = format!(r#"{{"code":"invalid_argument","message":"too far","details":[{{"type":"sepp.v1.ScheduledTooFar","value":"{}"}}]}}"#, b64(&detail)).into_bytes();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut inputs: Vec<Vec<u8>> = (0..body.len()).map(|n| body[..n].to_vec()).collect();
        for _ in 0..2000 {
            let mut b = body.clone();
            let i = (next() % b.len() as u64) as usize;
            b[i] = next() as u8;
            inputs.push(b);
            let len = (next() % 64) as usize;
            inputs.push((0..len).map(|_| next() as u8).collect());
        }
        for input in inputs {
            match parse_error(400, &input) {
                AttemptError::Status { .. } => {}
                other => panic!("{:?} gave {:?}", input, other),
            }
            let _ = Detail::decode("sepp.v1.ScheduledTooFar", &input);
            let _ = Detail::decode("google.rpc.PreconditionFailure", &input);
        }
    }
}
