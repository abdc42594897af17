//! # upload-once-core
//!
//! The protocol core shared by the upload-once wasm client and the reference
//! server. It does no I/O: no network, no storage, no clock and no random
//! number generator. Time is passed in as [`time::UnixMillis`] and
//! randomness through [`Entropy`], so every decision here runs natively and
//! deterministically in tests, including under scripted fault schedules.
//!
//! - [`wire`]: every request and response body of the HTTP protocol.
//! - [`error`]: stable error codes.
//! - [`restrictions`]: size and type rules, checked by both sides.
//! - [`attempt`]: one attempt's record and state machine.
//! - [`retry`]: failure classification and backoff.
//! - [`multipart`]: large files in parts — the part ledger and the pipeline
//!   that hashes, signs and sends them.
//! - [`scheduler`]: many attempts under a concurrency limit, with batched
//!   status checks.
//! - [`page`]: one browser page's uploads — the scheduler plus locks,
//!   restore and take-over, record writes, kept files and the session;
//!   events in, effects out (the run loop's brain).
//! - [`view`]: what the app sees of an attempt.
//! - [`options`]: what the app passes to `Uploader.open`.
//! - [`time`]: RFC 3339 and HTTP-date conversions.
#![deny(missing_docs)]

pub mod attempt;
pub mod decide;
pub mod error;
pub mod idmap;
pub mod multipart;
pub mod options;
pub mod page;
pub mod restrictions;
pub mod retry;
pub mod scheduler;
pub mod time;
#[cfg(test)]
mod typescript;
pub mod view;
pub mod wire;

pub use error::{Error, ErrorCode, Result};
use uuid::Uuid;

/// A source of randomness, provided by the caller (`crypto.getRandomValues`
/// in the browser, a seeded generator in tests).
pub trait Entropy {
    /// Fills `buf` with random bytes. Ids are minted from these, so in
    /// production they must come from a cryptographically secure source.
    fn fill(&mut self, buf: &mut [u8]);

    /// A uniform draw in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Mints a new attempt id: a random (version 4) UUID, 122 random bits.
pub fn new_attempt_id(entropy: &mut dyn Entropy) -> Uuid {
    let mut bytes = [0u8; 16];
    entropy.fill(&mut bytes);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}
