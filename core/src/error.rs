//! Stable error codes shared by the server (`problem+json` bodies) and the
//! client (the `code` of every error object JS sees), and the crate's error
//! type.

use core::fmt;

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal, $status:literal; )*) => {
        /// A stable, machine-readable error code.
        ///
        /// The string form (`as_str`) is part of the public contract: it is the
        /// `code` field of every `application/problem+json` body and of every
        /// error object the JS API throws. Codes are never renamed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The stable string form of the code.
            pub const fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $text, )* }
            }

            /// The HTTP status the reference server answers with this code.
            /// Client-only codes report 0.
            pub const fn http_status(self) -> u16 {
                match self { $( ErrorCode::$variant => $status, )* }
            }

            /// Parses the stable string form.
            pub fn parse(text: &str) -> Option<ErrorCode> {
                match text { $( $text => Some(ErrorCode::$variant), )* _ => None }
            }
        }
    };
}

error_codes! {
    // --- request shape -------------------------------------------------
    /// The body is not valid JSON, or a field has the wrong type.
    MalformedRequest = "malformed_request", 400;
    /// A path or body id is not a UUID.
    InvalidId = "invalid_id", 400;
    /// A JSON endpoint was called without `Content-Type: application/json`.
    UnsupportedMediaType = "unsupported_media_type", 415;
    /// The request body is larger than the endpoint accepts.
    PayloadTooLarge = "payload_too_large", 413;
    /// No route matches the path.
    RouteNotFound = "route_not_found", 404;
    /// The route exists but not for this method.
    MethodNotAllowed = "method_not_allowed", 405;
    /// A query parameter is missing or malformed.
    InvalidQuery = "invalid_query", 400;

    // --- authentication ------------------------------------------------
    /// No `Authorization: Bearer` token, or it is not valid here.
    Unauthorized = "unauthorized", 401;
    /// The guest session token is unknown or has expired.
    InvalidSession = "invalid_session", 401;
    /// The caller is authenticated but may not do this.
    Forbidden = "forbidden", 403;
    /// The guest code does not open this event.
    WrongGuestCode = "wrong_guest_code", 403;
    /// The event's host removed this guest session: it opens nothing more,
    /// and its uploads not yet saved were ended.
    SessionRevoked = "session_revoked", 403;
    /// The event's host shut this client address out of the event: no
    /// guest session is opened from it.
    AddressBlocked = "address_blocked", 403;

    // --- events ----------------------------------------------------------
    /// An event with this slug already exists.
    SlugTaken = "slug_taken", 409;
    /// The event definition is invalid (slug, title, limits or type patterns).
    InvalidEvent = "invalid_event", 422;

    // --- attempts ----------------------------------------------------------
    /// No such attempt, media or event in this caller's scope.
    NotFound = "not_found", 404;
    /// The attempt id was already used with different parameters.
    IdReused = "id_reused", 422;
    /// The file is larger than the event (or the app) allows.
    FileTooLarge = "file_too_large", 422;
    /// The file type is not allowed for the event (or the app).
    TypeNotAllowed = "type_not_allowed", 422;
    /// The file is empty.
    EmptyFile = "empty_file", 422;
    /// The filename is empty, too long or contains control characters.
    InvalidFilename = "invalid_filename", 422;
    /// The checksum is not 64 lowercase hex digits.
    InvalidChecksum = "invalid_checksum", 422;
    /// More ids in one status request than allowed (500).
    TooManyIds = "too_many_ids", 422;
    /// `POST /confirm` without an `Idempotency-Key` header.
    IdempotencyKeyMissing = "idempotency_key_missing", 400;
    /// The `Idempotency-Key` header is not the attempt id.
    IdempotencyKeyMismatch = "idempotency_key_mismatch", 400;
    /// Confirm arrived before the object was stored (retryable).
    ObjectMissing = "object_missing", 409;
    /// The size differs from the authorization or the stored object.
    SizeMismatch = "size_mismatch", 422;
    /// The content type differs from the authorization or the stored object.
    TypeMismatch = "type_mismatch", 422;
    /// The SHA-256 differs from the authorization or the stored object.
    ChecksumMismatch = "checksum_mismatch", 422;
    /// The attempt expired before it was confirmed.
    Expired = "expired", 410;
    /// The attempt is already confirmed; its object can no longer change.
    AlreadyConfirmed = "already_confirmed", 409;
    /// The file's bytes are not the bytes this attempt holds: on the guest's
    /// device, the file changed (or was removed) after it was picked (the
    /// browser would not read it any more, or read bytes other than those
    /// hashed at the pick, or the store holds a part with other bytes); at
    /// confirm, the composite checksum of the client's file differs from the
    /// one of the parts the store holds (a file spliced from two). Terminal:
    /// the guest picks the file again, which starts a new attempt.
    FileChanged = "file_changed", 422;
    /// A part number outside the attempt's parts, or too many in one request.
    InvalidPart = "invalid_part", 422;
    /// Parts were asked for an attempt that goes up in one PUT.
    NotMultipart = "not_multipart", 422;

    // --- storage (signed URL PUT) -----------------------------------------
    /// The signed URL has expired.
    UrlExpired = "url_expired", 403;
    /// The signed URL was altered or signed with another key.
    BadSignature = "bad_signature", 403;
    /// `Content-Length` or the body length differs from the signed length.
    LengthMismatch = "length_mismatch", 400;
    /// `Content-Type` differs from the signed content type.
    ContentTypeMismatch = "content_type_mismatch", 400;
    /// A different object is already stored under this key.
    ObjectExists = "object_exists", 412;
    /// The request body ended before the signed length.
    IncompleteBody = "incomplete_body", 400;

    /// The guest withdrew this upload (`DELETE /v1/attempts/{id}`): its URLs
    /// take no more bytes, a confirm or renew answers this, and a media
    /// record of it is taken down and its objects deleted.
    Withdrawn = "withdrawn", 410;

    // --- media -----------------------------------------------------------------
    /// The host took this media down (rejected it): its public links answer
    /// this until it is approved again; the host still sees it.
    Removed = "removed", 410;

    // --- quotas and limits ---------------------------------------------------
    /// The session has as many unconfirmed attempts as the server allows;
    /// confirm them (or let them expire) before starting more.
    TooManyUnconfirmed = "too_many_unconfirmed", 403;
    /// The session's attempts already add up to the bytes the server allows
    /// one session.
    SessionBytesExceeded = "session_bytes_exceeded", 403;
    /// The event opened as many guest sessions in the last hour as the server
    /// allows.
    TooManySessions = "too_many_sessions", 403;
    /// The event's attempts already add up to the bytes the server allows one
    /// event.
    EventBytesExceeded = "event_bytes_exceeded", 403;
    /// The session made as many attempts as the server allows one session
    /// (every attempt it ever made counts, duplicates too), or keeps as
    /// many media.
    SessionFilesExceeded = "session_files_exceeded", 403;
    /// The event holds as many media (or was asked for as many attempts)
    /// as the server allows one event.
    EventFilesExceeded = "event_files_exceeded", 403;
    /// The request took longer than the server allows: a JSON request as a
    /// whole, or a storage PUT whose body stopped arriving (retryable).
    RequestTimeout = "request_timeout", 408;

    // --- server health -------------------------------------------------------
    /// Too many requests; honour `Retry-After`.
    RateLimited = "rate_limited", 429;
    /// The object store did not answer (retryable).
    ObjectStoreUnavailable = "object_store_unavailable", 503;
    /// The database did not answer (retryable).
    DatabaseUnavailable = "database_unavailable", 503;
    /// `GET /readyz`: the server should not get traffic now (why is told to
    /// the admin alone).
    NotReady = "not_ready", 503;
    /// An unexpected server fault.
    Internal = "internal", 500;

    // --- client only -----------------------------------------------------------
    /// The request never got an answer (connection dropped, DNS, CORS, offline).
    Network = "network", 0;
    /// IndexedDB is missing, blocked or broken in this browser.
    StorageUnavailable = "storage_unavailable", 0;
    /// The browser refused to store the attempt record: quota exceeded.
    QuotaExceeded = "quota_exceeded", 0;
    /// The file's bytes are not held any more: the guest must pick it again.
    NeedsFile = "needs_file", 0;
    /// The browser could not read the file it holds for the attempt (a
    /// `NotReadableError`: a Blob too large for the engine to read from
    /// memory, or a file the device no longer lets it read). Terminal: the
    /// guest picks the file again.
    FileUnreadable = "file_unreadable", 0;
    /// More files were picked at once than the app allows (its
    /// `maxFilesPerPick`): nothing of the pick was recorded or sent.
    TooManyFiles = "too_many_files", 0;
    /// The files picked at once add up to more bytes than the app allows
    /// (its `maxPickBytes`): nothing of the pick was recorded or sent.
    PickTooLarge = "pick_too_large", 0;
    /// The user cancelled the attempt.
    Cancelled = "cancelled", 0;
    /// A retryable failure repeated more often than the retry policy allows.
    RetriesExhausted = "retries_exhausted", 0;
    /// The options given to the client are invalid.
    InvalidOptions = "invalid_options", 0;
    /// The server answered something the client cannot understand.
    UnexpectedResponse = "unexpected_response", 0;
    /// The uploader was closed.
    Closed = "closed", 0;
}

impl ErrorCode {
    /// Whether a request that failed with this code may be repeated as is.
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::RateLimited
                | ErrorCode::RequestTimeout
                | ErrorCode::ObjectStoreUnavailable
                | ErrorCode::DatabaseUnavailable
                | ErrorCode::NotReady
                | ErrorCode::Internal
                | ErrorCode::Network
                | ErrorCode::ObjectMissing
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with a stable code and a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The stable code.
    pub code: ErrorCode,
    /// A message for people; not part of the contract.
    pub message: String,
}

impl Error {
    /// Builds an error from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

/// The result type of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;
