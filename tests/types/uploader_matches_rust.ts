// The hand-written TypeScript of the package (src/uploader.d.ts) against
// the declarations derived from the Rust types that cross to JS
// (core/src/typescript.rs writes them to <target>/typescript/ when
// `cargo test -p upload-once-core` runs). `cargo xtask test core` runs
// both, then `tsc --noEmit --strict` on this file and that one.
//
// Each constant below holds `true` only when its two types agree; otherwise
// tsc names the difference, e.g. a field Rust has that the hand-written
// interface lacks:
//   Type 'boolean' is not assignable to type '{ onlyInRust: "thumbnailUrl"; onlyHandWritten: never; }'.
//
// Where the hand-written type says more than a Rust type can (a string
// that only ever holds certain values), the Rust type is narrowed here, one
// field at a time, each with its reason; a narrowing must still fit the
// Rust type, or the check fails.

import type * as Hand from "../../src/uploader";
import type * as Rust from "upload-once-core/generated";

/** Every key of every member of a union. */
type Keys<T> = T extends unknown ? keyof T : never;

/**
 * `true` when the two types name the same keys and each is assignable to
 * the other (a field that is optional on one side only passes assignability
 * both ways, hence the keys); otherwise what differs.
 */
type Same<H, R> = [Keys<H>] extends [Keys<R>]
  ? [Keys<R>] extends [Keys<H>]
    ? [H] extends [R]
      ? [R] extends [H]
        ? true
        : { rustNotAssignableToHandWritten: R }
      : { handWrittenNotAssignableToRust: H }
    : { onlyInRust: Exclude<Keys<R>, Keys<H>>; onlyHandWritten: Exclude<Keys<H>, Keys<R>> }
  : { onlyInRust: Exclude<Keys<R>, Keys<H>>; onlyHandWritten: Exclude<Keys<H>, Keys<R>> };

/**
 * Rust's object type `R` with the fields of `F` narrowed; `never` (so the
 * check fails) when the result no longer fits `R`.
 */
type Narrowed<R, F extends { [K in keyof F]: K extends keyof R ? unknown : never }> = [
  Omit<R, keyof F> & F,
] extends [R]
  ? Omit<R, keyof F> & F
  : never;

/**
 * An error code. Rust holds it as a `String`: an `ErrorCode`'s text
 * (the server's problem+json codes are the same enum), or `http_<status>`
 * for an answer without a code (`retry::Failure::code`).
 */
type Code = Rust.ErrorCode | `http_${number}`;

// The three axes of an attempt and the error codes: the same unions.
export const transferState: Same<Hand.TransferState, Rust.Transfer> = true;
export const confirmationState: Same<Hand.ConfirmationState, Rust.Confirmation> = true;
export const moderationState: Same<Hand.ModerationState, Rust.ModerationView> = true;
export const uploadErrorCode: Same<Hand.UploadErrorCode, Rust.ErrorCode> = true;

// `code` narrowed to the codes (see `Code`).
type AttemptErrorInfo = Narrowed<Rust.AttemptError, { code: Code }>;
export const attemptErrorInfo: Same<Hand.AttemptErrorInfo, AttemptErrorInfo> = true;
export const sessionErrorInfo: Same<Hand.SessionErrorInfo, Narrowed<Rust.ErrorInfo, { code: Code }>> = true;
// Saving records fails only as these two (src/store.rs, `storage_error`).
export const storageErrorInfo: Same<
  Hand.StorageErrorInfo,
  Narrowed<Rust.ErrorInfo, { code: "storage_unavailable" | "quota_exceeded" }>
> = true;

export const mediaInfo: Same<Hand.MediaInfo, Rust.MediaSummary> = true;
type AttemptView = Narrowed<Rust.AttemptView, { error: AttemptErrorInfo | null }>;
export const attemptView: Same<Hand.AttemptView, AttemptView> = true;

// Rust writes `ok: bool` and `status: &'static str` (src/js.rs, `outcome`
// writes `ok: true` with these four statuses, a `waiting` id with
// `not_same_file` only, and `ok: false` when refused); the hand-written
// union tells them apart.
type Accepted = Extract<Rust.AddOutcome, { attempt: unknown }>;
type Refused = Extract<Rust.AddOutcome, { fileName: unknown }>;
export const addOutcome: Same<
  Hand.AddOutcome,
  | Narrowed<
      Accepted,
      { ok: true; status: "new" | "reattached" | "duplicate"; attempt: AttemptView; waiting?: undefined }
    >
  | Narrowed<Accepted, { ok: true; status: "not_same_file"; attempt: AttemptView; waiting: string }>
  | Narrowed<Refused, { ok: false; error: Narrowed<Rust.ErrorInfo, { code: Code }> }>
> = true;

export const eventInfo: Same<Hand.EventInfo, Rust.EventInfo> = true;
export const backgroundFetchSettled: Same<Hand.BackgroundFetchSettled, Rust.BackgroundFetchSettled> = true;
// `Uploader.handOverNow` writes each PUT's `UploadInstruction` with the
// attempt's `id` set on it (src/js.rs); its headers are always present.
export const handedOverPut: Same<
  Hand.HandedOverPut,
  Narrowed<Rust.UploadInstruction, { headers: Record<string, string> }> & { id: string }
> = true;

// The unions the hand-written file writes out inline, field by field (the
// xtask fails if a type derived from Rust is named by no line here).
export const notKept: Same<NonNullable<Hand.AttemptView["notKeptReason"]>, Rust.NotKept> = true;
export const moderation: Same<Hand.MediaInfo["moderation"], Rust.Moderation> = true;
export const moderationPolicy: Same<Hand.EventInfo["moderation"], Rust.ModerationPolicy> = true;
export const dedup: Same<Hand.EventInfo["dedup"], Rust.Dedup> = true;
export const uploaderOptions: Same<Hand.UploaderOptions, Rust.UploaderOptions> = true;
export const retryOptions: Same<Hand.RetryOptions, Rust.RetryOptions> = true;

// Not derived: `UploadError` is a JS `Error` that src/error.rs makes by
// hand, with `code` set to an error's `Code`.
export const uploadError: Same<Hand.UploadError["code"], Code> = true;

// Not derived either: the worker's message API (`serveUploader`, src/remote.rs
// and `serveUploaderOn` in src/glue.js) is JS over the `Uploader` class, so
// its messages have no Rust type. Each is held against the types above that
// it carries, so a change to one of those reaches it.
export const uploaderState: Same<Hand.UploaderState["attempts"][number], Hand.AttemptView> = true;
export const uploaderStateErrors: Same<NonNullable<Hand.UploaderState["storageError"]>, Hand.StorageErrorInfo> = true;
export const uploaderCalls: Same<Hand.UploaderCalls["add"]["value"][number], Hand.AddOutcome> = true;
export const uploaderCallOpen: Same<Hand.UploaderCall<"open">["args"][0], Hand.UploaderOptions> = true;
export const uploaderReply: Same<Extract<Hand.UploaderReply, { error: unknown }>["error"]["code"], Code> = true;
export const uploaderEventMessage: Same<Extract<Hand.UploaderEventMessage, { uploadOnceEvent: "change" }>["value"], Hand.AttemptView> = true;
// `settleBackgroundFetch` reads these of the browser's registration (src/glue.js, `settleWith`).
export const endedBackgroundFetch: Same<keyof Hand.EndedBackgroundFetch, "id" | "result" | "failureReason"> = true;
export const uploaderPort: Same<Parameters<Hand.UploaderPort["postMessage"]>[0], Hand.UploaderReply | Hand.UploaderEventMessage> = true;
