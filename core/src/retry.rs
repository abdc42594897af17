//! The retry policy: which failures are retried, how long to wait, and when
//! to give up. Pure functions, so every decision can be tested natively.

use crate::error::ErrorCode;

/// How a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No answer at all: connection refused or dropped, DNS, CORS, offline,
    /// or a timeout. The request may or may not have taken effect.
    Network,
    /// The server answered with a non-success status.
    Http {
        /// The HTTP status.
        status: u16,
        /// The stable `code` of the problem body, if there was one.
        code: Option<String>,
        /// The problem's `detail`, or the status text.
        message: String,
        /// The `Retry-After` delay in milliseconds, if the header was sent.
        retry_after_ms: Option<u64>,
    },
    /// A success status with a body the client cannot read.
    Unexpected(String),
    /// The file changed on the guest's device after it was picked (found
    /// when its bytes were to be sent): nothing was stored, and sending it
    /// again cannot help.
    FileChanged,
    /// The browser could not read the file it holds (`NotReadableError`):
    /// nothing more of it can be sent, and sending it again cannot help.
    FileUnreadable,
}

impl Failure {
    /// Builds an HTTP failure.
    pub fn http(status: u16, code: Option<&str>, message: impl Into<String>) -> Failure {
        Failure::Http { status, code: code.map(str::to_owned), message: message.into(), retry_after_ms: None }
    }

    /// The stable code this failure is reported with.
    pub fn code(&self) -> String {
        match self {
            Failure::Network => ErrorCode::Network.as_str().to_owned(),
            Failure::Http { code: Some(code), .. } => code.clone(),
            Failure::Http { status, .. } => match *status {
                429 => ErrorCode::RateLimited.as_str().to_owned(),
                500..=599 => ErrorCode::Internal.as_str().to_owned(),
                _ => format!("http_{status}"),
            },
            Failure::Unexpected(_) => ErrorCode::UnexpectedResponse.as_str().to_owned(),
            Failure::FileChanged => ErrorCode::FileChanged.as_str().to_owned(),
            Failure::FileUnreadable => ErrorCode::FileUnreadable.as_str().to_owned(),
        }
    }

    /// A message for people.
    pub fn message(&self) -> String {
        match self {
            Failure::Network => "the connection failed before an answer arrived".to_owned(),
            Failure::Http { message, status, .. } if message.is_empty() => format!("the server answered {status}"),
            Failure::Http { message, .. } => message.clone(),
            Failure::Unexpected(message) => message.clone(),
            Failure::FileChanged => {
                "the file changed on this device after it was picked, so it was not uploaded; pick it again".to_owned()
            }
            Failure::FileUnreadable => "the browser could not read this file (it may be too large for this browser to \
                read from memory, or no longer readable on this device); pick it again"
                .to_owned(),
        }
    }

    fn code_is(&self, code: ErrorCode) -> bool {
        matches!(self, Failure::Http { code: Some(c), .. } if c == code.as_str())
    }
}

/// The protocol step a failure happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `POST /v1/events/{slug}/attempts`.
    Authorize,
    /// The PUT to the signed URL.
    Upload,
    /// `POST /v1/attempts/{id}/renew`.
    Renew,
    /// `POST /v1/attempts/{id}/confirm`.
    Confirm,
    /// `POST /v1/attempts/status`.
    Status,
}

/// What to do about a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Repeat the same step after a backoff of at least `min_delay_ms`.
    Retry {
        /// The server's `Retry-After`, if it gave one.
        min_delay_ms: u64,
    },
    /// The outcome is unknown: after a backoff, ask the server what happened.
    Check,
    /// The signed URL no longer works: get a fresh one, then upload.
    Renew,
    /// The object is (or may be) stored already: go straight to confirm.
    Confirm,
    /// The server expired the attempt.
    Expired,
    /// Confirm found a mismatch: the attempt is rejected for good.
    Rejected,
    /// Anything else: terminal, shown to the user, never retried.
    Fail,
}

/// Classifies a failed step.
pub fn classify(op: Operation, failure: &Failure) -> Disposition {
    use Disposition::*;
    let (status, retry_after) = match failure {
        Failure::Network => {
            return if op == Operation::Upload { Check } else { Retry { min_delay_ms: 0 } };
        }
        // A garbled success could have taken effect: only the server knows.
        Failure::Unexpected(_) => {
            return if op == Operation::Status { Retry { min_delay_ms: 0 } } else { Check };
        }
        Failure::FileChanged | Failure::FileUnreadable => return Fail,
        Failure::Http { status, retry_after_ms, .. } => (*status, retry_after_ms.unwrap_or(0)),
    };
    match (op, status) {
        (_, 429) => Retry { min_delay_ms: retry_after },
        // A 5xx from storage might have come after the bytes landed.
        (Operation::Upload, 500..=599) => Check,
        (_, 500..=599) => Retry { min_delay_ms: retry_after },
        (_, 408) => Retry { min_delay_ms: retry_after },
        (Operation::Upload, 403)
            if failure.code_is(ErrorCode::UrlExpired) || failure.code_is(ErrorCode::BadSignature) =>
        {
            Renew
        }
        // S3-compatible stores answer an expired presigned URL with a bare 403.
        (Operation::Upload, 403) if matches!(failure, Failure::Http { code: None, .. }) => Renew,
        (Operation::Upload, 409 | 412) => Confirm,
        // Storage refuses bytes for an attempt that ended (expired or
        // rejected): the server says which.
        (Operation::Upload, 410) => Check,
        // A renew refused because the attempt was rejected: the status
        // carries the reason.
        (Operation::Renew, 422) => Check,
        (Operation::Renew, 409) if failure.code_is(ErrorCode::AlreadyConfirmed) => Confirm,
        (Operation::Confirm, 409) if failure.code_is(ErrorCode::ObjectMissing) => Check,
        (_, 409) => Retry { min_delay_ms: retry_after },
        (Operation::Authorize | Operation::Renew | Operation::Confirm, 410) => Expired,
        (Operation::Confirm, 422) => Rejected,
        // The guest session lapsed (or the server forgot it): a new attempt
        // is authorized under a new session.
        (Operation::Authorize, 401) if failure.code_is(ErrorCode::InvalidSession) => Retry { min_delay_ms: 0 },
        // An attempt is asked about, renewed and confirmed with the token
        // that authorized it, which the server honours after the session
        // lapsed: a 401 means the server no longer knows that session at
        // all (revoked). Nothing can be learnt about the attempt, and a new
        // one might store the photo twice: the guest is told (a plain
        // failure, below).
        _ => Fail,
    }
}

/// Backoff and give-up limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The first backoff ceiling in milliseconds (default 1 s).
    pub base_ms: u64,
    /// The largest backoff ceiling in milliseconds (default 30 s).
    pub cap_ms: u64,
    /// Consecutive retryable failures before the attempt fails with
    /// `retries_exhausted` (default 10). The user can still retry by hand.
    pub max_retries: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { base_ms: 1000, cap_ms: 30_000, max_retries: 10 }
    }
}

impl RetryPolicy {
    /// The backoff ceiling before retry number `retry` (0-based):
    /// `min(cap, base * 2^retry)`.
    pub fn ceiling_ms(&self, retry: u32) -> u64 {
        let exp = self.base_ms.saturating_mul(1u64.checked_shl(retry.min(63)).unwrap_or(u64::MAX));
        exp.min(self.cap_ms)
    }

    /// Exponential backoff with full jitter: a delay drawn uniformly from
    /// `[0, ceiling]`, using `unit` in `[0, 1)` as the random draw, and
    /// never shorter than the server's `Retry-After`.
    pub fn delay_ms(&self, retry: u32, unit: f64, min_delay_ms: u64) -> u64 {
        let unit = if unit.is_finite() { unit.clamp(0.0, 1.0) } else { 0.0 };
        let jittered = (self.ceiling_ms(retry) as f64 * unit) as u64;
        jittered.max(min_delay_ms)
    }
}
