//! The TypeScript declarations of every value that crosses to JS, derived
//! from the Rust types (test builds only: the derives and `ts-rs` are
//! `cfg(test)`, so the package carries none of it).
//!
//! [`the_declarations_of_the_js_api_are_written`] writes them as one ambient
//! module, `upload-once-core/generated`, to `<target>/typescript/`. The test
//! layer (`cargo xtask test core`) then type-checks
//! `tests/types/uploader_matches_rust.ts`, which holds the hand-written
//! `src/uploader.d.ts` against it, type by type: a field added in Rust
//! without its TypeScript fails there.
//!
//! The declarations follow how the browser client serialises
//! (`src/serde_js.rs`): `None` is `null` (`T | null`), a field skipped when
//! empty is left out (`field?: T`), integers are numbers (up to 2^53, so
//! `u64` and `i64` too) and ids are strings. Where the derive alone would
//! say less than that, the field says it with `#[ts(...)]`: a field the
//! serializer leaves out when it is `None` (`skip_serializing_if`) is
//! `#[ts(optional)]`, `field?: T` (ts-rs would write `T | null`, or
//! `?: T | null` with `#[serde(default)]`: what deserialising accepts), and
//! `AttemptView::not_kept_reason` is always a `NotKept`'s text. The options
//! are `#[ts(optional_fields)]`: the app may leave out every `Option`.

use std::path::PathBuf;

use ts_rs::{Config, TS};

use crate::ErrorCode;
use crate::attempt::{AttemptError, Confirmation, ModerationView, NotKept, Transfer};
use crate::options::{RetryOptions, UploaderOptions};
use crate::view::{AddOutcome, AttemptView, BackgroundFetchSettled, ErrorInfo};
use crate::wire::{Dedup, EventInfo, MediaSummary, Moderation, ModerationPolicy, UploadInstruction};

/// The module name the checker imports the declarations from.
const MODULE: &str = "upload-once-core/generated";

/// Integers as the serializer writes them: numbers, not `bigint`.
fn config() -> Config {
    Config::new().with_large_int("number".to_owned())
}

/// `export type Name = …;` of a derived type.
fn declaration<T: TS>() -> String {
    format!("export {}", T::decl(&config()))
}

/// Every error code's text, as a union (the codes are written by
/// `ErrorCode::as_str`, not by a serde derive).
fn error_code_union() -> String {
    let codes: Vec<String> = ErrorCode::ALL.iter().map(|c| format!("\"{}\"", c.as_str())).collect();
    format!("export type ErrorCode = {};", codes.join(" | "))
}

/// The ambient module with every declaration.
fn module() -> String {
    let declarations = [
        declaration::<AttemptView>(),
        declaration::<Transfer>(),
        declaration::<Confirmation>(),
        declaration::<ModerationView>(),
        declaration::<NotKept>(),
        declaration::<AttemptError>(),
        declaration::<MediaSummary>(),
        declaration::<Moderation>(),
        declaration::<ErrorInfo>(),
        declaration::<AddOutcome>(),
        declaration::<BackgroundFetchSettled>(),
        declaration::<UploadInstruction>(),
        declaration::<EventInfo>(),
        declaration::<ModerationPolicy>(),
        declaration::<Dedup>(),
        declaration::<UploaderOptions>(),
        declaration::<RetryOptions>(),
        error_code_union(),
    ];
    let mut text = format!(
        "// Derived from the Rust types by upload-once-core's tests (src/typescript.rs). Do not edit.\n\
         declare module \"{MODULE}\" {{\n"
    );
    for d in declarations {
        text.push_str("  ");
        text.push_str(&d);
        text.push('\n');
    }
    text.push_str("}\n");
    text
}

/// `<target>/typescript`: the test binary runs from `<target>/debug/deps`.
fn out_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors().nth(3).expect("<target>/debug/deps/<binary>").join("typescript")
}

/// Writes `<target>/typescript/upload-once-core.d.ts` for the test layer's
/// type check.
#[test]
fn the_declarations_of_the_js_api_are_written() {
    let dir = out_dir();
    std::fs::create_dir_all(&dir).expect("the output directory");
    let path = dir.join("upload-once-core.d.ts");
    std::fs::write(&path, module()).expect("the declarations");
}
