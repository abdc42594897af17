//! The server's rules as pure functions: they take what the records and the
//! object store hold and answer the decision, with no I/O, so a rule is
//! read, and tested, in one place.

pub mod dedup;
pub mod multipart;
pub mod records;
