//! The reference server's decisions, as pure functions: they take what the
//! records and the object store hold and answer what to do, with no I/O.
//! The server calls them between its reads and its writes; the client's
//! simulation (`core/tests/support`, `FakeServer`) calls the same ones, so
//! the client is tested against the server's own rules.
//!
//! - [`authorize`]: the request's checks, and what a repeat of an id may be;
//! - [`signing`]: whether a URL may be signed now (renew, parts), and which
//!   parts may be asked for;
//! - [`confirm`]: a confirm's outcome from what the store holds;
//! - [`dedup`]: the scope where the same bytes are looked for, and when a
//!   claimed SHA-256 names the file asked for;
//! - [`moderation`]: what a host's decision changes;
//! - [`multipart`]: how a file in parts is split, and which parts a confirm
//!   may assemble;
//! - [`quota`]: whether one more attempt or session fits.
//!
//! The client never calls them: what it does not call, the linker drops
//! from the package.

pub mod authorize;
pub mod confirm;
pub mod dedup;
pub mod moderation;
pub mod multipart;
pub mod quota;
pub mod signing;

use crate::error::{Error, ErrorCode};
use crate::wire::AttemptState;

/// An attempt as a request found it (under its row lock, for a change).
#[derive(Clone, Copy, Debug)]
pub struct Attempt<'a> {
    /// Its state.
    pub state: AttemptState,
    /// Whether its expiry has passed (the sweeper may not have run yet).
    pub due: bool,
    /// The authorized size.
    pub size: u64,
    /// The authorized content type.
    pub content_type: &'a str,
    /// The authorized SHA-256, if one was given.
    pub sha256: Option<&'a str>,
    /// Whether it is sent in parts.
    pub in_parts: bool,
    /// When rejected: the code and the reason it was rejected with.
    pub rejection: Option<(&'a str, &'a str)>,
}

impl Attempt<'_> {
    /// Whether it is over by expiry: recorded expired, or still authorized
    /// past its expiry.
    pub fn expired(&self) -> bool {
        self.state == AttemptState::Expired || (self.state == AttemptState::Authorized && self.due)
    }

    /// The answer about it once rejected, with what was recorded (an
    /// unrecorded code or reason reads as `rejected`).
    pub fn rejected(&self) -> Refusal {
        let (code, reason) = self.rejection.unwrap_or(("rejected", "rejected"));
        Refusal::rejected(code, reason)
    }
}

/// An answer that refuses, with the code and the reason to give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The error code (its HTTP status is [`ErrorCode::http_status`]).
    pub code: ErrorCode,
    /// The reason, for the guest.
    pub reason: String,
}

impl Refusal {
    pub(crate) fn new(code: ErrorCode, reason: impl Into<String>) -> Refusal {
        Refusal { code, reason: reason.into() }
    }

    /// The answer about an attempt that expired before it was confirmed.
    pub fn expired() -> Refusal {
        Refusal::new(ErrorCode::Expired, "this attempt expired before it was confirmed; start a new one")
    }

    /// The answer about an attempt rejected with this code and reason (as
    /// recorded; a code this version does not know reads as
    /// `size_mismatch`).
    pub fn rejected(code: &str, reason: &str) -> Refusal {
        Refusal::new(ErrorCode::parse(code).unwrap_or(ErrorCode::SizeMismatch), reason)
    }

    /// The answer about an attempt already confirmed, to a request that
    /// would sign a URL for it.
    pub fn already_confirmed() -> Refusal {
        Refusal::new(ErrorCode::AlreadyConfirmed, "this attempt is already confirmed")
    }
}

impl From<Error> for Refusal {
    /// A failed check of [`crate::restrictions`], as an answer.
    fn from(e: Error) -> Refusal {
        Refusal { code: e.code, reason: e.message }
    }
}
