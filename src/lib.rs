//! # upload-once
//!
//! Browser uploads that are stored **exactly once**, however often the
//! network drops, the tab is killed or the page is reloaded.
//!
//! - An attempt id is minted when the guest picks a file and committed to
//!   IndexedDB (strict durability) before the first byte leaves.
//! - Bytes go straight from the `Blob` to object storage through a signed
//!   URL (XMLHttpRequest, with progress); they never pass through wasm
//!   memory.
//! - Confirm is create-or-return on the server, retried with the same id.
//! - After a reload, every unfinished attempt asks the server what became of
//!   it, and only one tab drives each attempt.
//!
//! All decisions live in [`upload_once_core`]; this crate is the browser
//! adapters ([`store::IndexedDbStore`], [`transport::XhrTransport`],
//! [`transport::HttpApi`]), the driver loop ([`client::Client`]) and the JS
//! API ([`js::Uploader`]).
#![deny(missing_docs)]

pub mod client;
pub mod env;
pub mod error;
pub mod js;
pub mod remote;
pub mod serde_js;
pub mod store;
pub mod tabs;
pub mod transport;

pub use client::{Adapters, Client, Options};
pub use error::{Error, Result};
pub use js::Uploader;
pub use upload_once_core as core;
pub use upload_once_core::page::Added;

/// Talc instead of the default dlmalloc: it coalesces freed blocks like
/// dlmalloc does, in less code (docs/package-size.md).
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
