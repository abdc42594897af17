//! The server's one error type. Every failure becomes an
//! `application/problem+json` answer with a stable `code`; a fault in a
//! backend becomes a retryable 503, never a half-done change.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use upload_once_core::ErrorCode;
use upload_once_core::wire::Problem;

/// A database failure a response carries, for the operations layer
/// (`routes::operations::run_to_completion`) to report: [`Error`] leaves the logging to
/// it, so an outage is logged once rather than once per request.
#[derive(Clone, Debug)]
pub struct DatabaseFailure(pub String);

/// Everything that can go wrong in the server.
#[derive(Debug)]
pub enum Error {
    /// A protocol-level answer: the caller did something the contract
    /// refuses, or asked for something that is not there.
    Problem {
        /// Stable code.
        code: ErrorCode,
        /// What happened.
        detail: String,
    },
    /// The database failed.
    Database(sqlx::Error),
    /// The object store failed or could not be reached.
    ObjectStore(String),
    /// Reading or writing local files failed.
    Io(std::io::Error),
    /// The configuration is unusable.
    Config(String),
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A protocol answer with a code and a detail.
    pub fn problem(code: ErrorCode, detail: impl Into<String>) -> Error {
        Error::Problem { code, detail: detail.into() }
    }

    /// `404 not_found`, worded the same for "unknown" and "not yours".
    pub fn not_found(what: &str) -> Error {
        Error::problem(ErrorCode::NotFound, format!("no such {what}"))
    }

    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Problem { code, .. } => *code,
            Error::Database(e) if is_transient_db_error(e) => ErrorCode::DatabaseUnavailable,
            Error::Io(e) if is_storage_full(e) => ErrorCode::ObjectStoreUnavailable,
            Error::Database(_) | Error::Io(_) | Error::Config(_) => ErrorCode::Internal,
            Error::ObjectStore(_) => ErrorCode::ObjectStoreUnavailable,
        }
    }

    /// The problem body a request failing with this error is answered
    /// with.
    pub fn to_problem(&self) -> Problem {
        problem_body(self.code(), self.detail())
    }

    fn detail(&self) -> String {
        match self {
            Error::Problem { detail, .. } => detail.clone(),
            Error::Database(e) if is_transient_db_error(e) => "the database is busy; try again".to_owned(),
            Error::Io(e) if is_storage_full(e) => "the object store is out of space; try again later".to_owned(),
            Error::ObjectStore(_) => "the object store did not answer; try again".to_owned(),
            Error::Database(_) | Error::Io(_) | Error::Config(_) => "an unexpected server error".to_owned(),
        }
    }
}

/// The local object store's disk or quota is full: nothing is wrong with the
/// request, and it may succeed once space is freed.
fn is_storage_full(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
}

fn is_transient_db_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => {
            // SQLite: SQLITE_BUSY (5) and its extended codes (recovery 261,
            // snapshot 517, timeout 773), SQLITE_LOCKED (6) and shared-cache
            // 262; PostgreSQL: serialization failure, deadlock, lock timeout
            // (55P03), admin shutdown, cannot connect.
            matches!(
                db.code().as_deref(),
                Some("5" | "6" | "261" | "262" | "517" | "773" | "40001" | "40P01" | "55P03" | "57P01" | "57P03")
            )
        }
        _ => false,
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Problem { code, detail } => write!(f, "{code}: {detail}"),
            Error::Database(e) => write!(f, "database: {e}"),
            Error::ObjectStore(e) => write!(f, "object store: {e}"),
            Error::Io(e) => write!(f, "io: {e}"),
            Error::Config(e) => write!(f, "configuration: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Database(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<upload_once_core::decide::confirm::Refusal> for Error {
    fn from(refusal: upload_once_core::decide::confirm::Refusal) -> Self {
        Error::Problem { code: refusal.code, detail: refusal.reason }
    }
}

impl From<upload_once_core::Error> for Error {
    fn from(e: upload_once_core::Error) -> Self {
        Error::Problem { code: e.code, detail: e.message }
    }
}

/// Builds the problem body for a code.
pub fn problem_body(code: ErrorCode, detail: String) -> Problem {
    let status = code.http_status();
    Problem {
        type_uri: format!("urn:upload-once:{}", code.as_str()),
        title: StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Error").to_owned(),
        status,
        detail,
        code: code.as_str().to_owned(),
        retryable: code.is_retryable(),
    }
}

/// A `problem+json` response for a code.
pub fn problem_response(code: ErrorCode, detail: String) -> Response {
    let body = problem_body(code, detail);
    let status = StatusCode::from_u16(body.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let json = serde_json::to_vec(&body).unwrap_or_default();
    let mut response = (status, json).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if matches!(
        code,
        ErrorCode::DatabaseUnavailable
            | ErrorCode::ObjectStoreUnavailable
            | ErrorCode::NotReady
            | ErrorCode::RateLimited
    ) {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let code = self.code();
        match &self {
            Error::Problem { .. } => tracing::debug!(%code, "{self}"),
            // Logged once per outage by the health record, not per request.
            Error::Database(e) => {
                let mut response = problem_response(code, self.detail());
                response.extensions_mut().insert(DatabaseFailure(e.to_string()));
                return response;
            }
            _ => tracing::error!(%code, "{self}"),
        }
        problem_response(code, self.detail())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_a_retryable_object_store_answer_not_an_internal_error() {
        // ENOSPC and EDQUOT, as the local store's writes report them.
        for errno in [28, 122] {
            let e = Error::Io(std::io::Error::from_raw_os_error(errno));
            assert_eq!(e.code(), ErrorCode::ObjectStoreUnavailable, "errno {errno}");
            assert!(e.code().is_retryable());
            assert!(e.detail().contains("out of space"));
        }
        let other = Error::Io(std::io::Error::from_raw_os_error(5)); // EIO
        assert_eq!(other.code(), ErrorCode::Internal);
    }
}
