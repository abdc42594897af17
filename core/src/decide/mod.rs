//! The reference server's decisions, as pure functions: they take what the
//! records and the object store hold and answer what to do, with no I/O.
//! The server calls them between its reads and its writes; the client's
//! simulation (`core/tests/support`, `FakeServer`) calls the same ones, so
//! the client is tested against the server's own rules.
//!
//! The client never calls them: what it does not call, the linker drops
//! from the package.

pub mod confirm;
