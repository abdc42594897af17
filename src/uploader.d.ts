/** Where the bytes are. `needs_file`: the guest must pick the file again. */
export type TransferState = "queued" | "uploading" | "uploaded" | "needs_file" | "failed";

/** Whether the app accepted the media record. `failed`: the bytes are stored but the confirm could not be made (see `error`); `retry()` asks again. */
export type ConfirmationState = "unconfirmed" | "confirming" | "confirmed" | "rejected" | "expired" | "failed";

/** Whether the host approved the media for the wall. */
export type ModerationState = "unknown" | "pending" | "approved" | "rejected";

/** Stable error codes (client-side and from the server's problem+json). */
export type UploadErrorCode =
  | "malformed_request" | "invalid_id" | "unsupported_media_type" | "payload_too_large" | "route_not_found"
  | "method_not_allowed" | "invalid_query" | "unauthorized" | "invalid_session" | "forbidden" | "wrong_guest_code"
  | "session_revoked" | "address_blocked"
  | "slug_taken" | "invalid_event" | "not_found" | "id_reused" | "file_too_large" | "type_not_allowed" | "empty_file"
  | "invalid_filename" | "invalid_checksum" | "too_many_ids" | "idempotency_key_missing" | "idempotency_key_mismatch"
  | "object_missing" | "size_mismatch" | "type_mismatch" | "checksum_mismatch" | "expired" | "already_confirmed"
  | "invalid_part" | "not_multipart" | "url_expired" | "bad_signature" | "length_mismatch" | "content_type_mismatch"
  | "object_exists" | "incomplete_body" | "withdrawn" | "removed" | "too_many_unconfirmed" | "session_bytes_exceeded"
  | "too_many_sessions" | "event_bytes_exceeded" | "session_files_exceeded" | "event_files_exceeded" | "request_timeout" | "rate_limited" | "object_store_unavailable"
  | "database_unavailable" | "not_ready"
  | "file_changed" | "internal" | "network" | "storage_unavailable" | "quota_exceeded" | "needs_file"
  | "file_unreadable" | "too_many_files" | "pick_too_large" | "cancelled" | "retries_exhausted" | "invalid_options"
  | "unexpected_response" | "closed";

/** Every error the uploader throws or reports. `code` is stable; `message` is for people. */
export interface UploadError extends Error {
  readonly code: UploadErrorCode | `http_${number}`;
}

/** The last error of an attempt. It is final when the attempt's `terminal` is true; otherwise the attempt is retrying (`nextRetryAt`), `offline` or `paused`. */
export interface AttemptErrorInfo {
  code: UploadErrorCode | `http_${number}`;
  message: string;
}

/** Why this page cannot save attempt records in IndexedDB (`Uploader.storageError`). */
export interface StorageErrorInfo {
  code: "storage_unavailable" | "quota_exceeded";
  message: string;
}

/** Why the server refused this page a guest session (`Uploader.sessionError`, `onSessionChange`). */
export interface SessionErrorInfo {
  code: UploadErrorCode | `http_${number}`;
  message: string;
}

/** The media record, once confirmed. */
export interface MediaInfo {
  id: string;
  moderation: "pending" | "approved" | "rejected";
  /** The host's reason, when rejected (never a duplicate's: it is about another guest's upload). */
  reason?: string;
  /** Where the bytes can be read back (its display rendition). Absent for a duplicate (`duplicate`) of a photo the host has not approved: what another guest shared is shown only once it is on the wall. */
  url?: string;
  /** For a file stored in parts: SHA-256 over the parts' digests, then `-` and the part count. */
  composite_sha256?: string;
  /** This attempt's bytes were already stored in the event: the media is the one stored before (see `AttemptView.duplicateOf`). */
  duplicate?: boolean;
}

/** One attempt: one file the guest picked. */
export interface AttemptView {
  id: string;
  event: string;
  fileName: string;
  size: number;
  type: string;
  lastModified: number;
  objectKey: string | null;
  transfer: TransferState;
  bytesSent: number;
  bytesTotal: number;
  confirmation: ConfirmationState;
  moderation: ModerationState;
  media: MediaInfo | null;
  error: AttemptErrorInfo | null;
  retries: number;
  nextRetryAt: number | null;
  createdAt: number;
  updatedAt: number;
  /** The expired attempt this one continues. */
  replaces: string | null;
  /** The attempt that continues this expired one. */
  replacedBy: string | null;
  /** Nothing more happens by itself (confirmed, rejected, expired, or failed). */
  terminal: boolean;
  /** This page uploads it (another tab may be driving it otherwise). */
  drivenHere: boolean;
  /** The file's bytes are available here (in memory or kept in IndexedDB). */
  fileHeld: boolean;
  /** The file's bytes are kept in IndexedDB: a reload continues the upload without picking the file again. */
  fileKept: boolean;
  /** Why they are not kept, when they are not: over `keepFileMaxBytes`, over `keepFilesTotalBytes`, beyond the room `navigator.storage.estimate()` leaves, or refused by the browser. */
  notKeptReason: "too_large" | "over_total" | "no_room" | "refused" | null;
  /** The guest paused the transfer (`pause(id)`): nothing is sent until `resume(id)`; parts the server holds stay stored, and a reload keeps it paused. */
  paused: boolean;
  /** Its bytes were handed to a Background Fetch (`handOver(uploader, …)`): the browser sends them, also after the tab is closed, and the service worker confirms it (`settleBackgroundFetch`); `takeBack(uploader, …)` drives it here again. */
  inBackground: boolean;
  /** Waiting for the browser to come back online. */
  offline: boolean;
  /** The same photo (the same bytes) was already shared in this event, by this guest or another (within the event's `dedup` scope): it is stored only once (a file that goes up in one PUT was not sent again; a large file in parts was sent, and its copy dropped at confirm), and `media` is that media record. */
  duplicateOf: string | null;
  /** A large file goes up in parts: how many the server holds (`null` for a single upload). */
  partsDone: number | null;
  /** A large file goes up in parts: how many there are (`null` for a single upload). */
  partCount: number | null;
}

/** What `add` did with one file (`add` answers one outcome per file, in the order given). */
export type AddOutcome =
  | { ok: true; status: "new" | "reattached" | "duplicate"; attempt: AttemptView }
  /** Same name, size and time as the file attempt `waiting` waits for, but other bytes in a part the server holds of it: not the same file, so a new attempt (`attempt`); `waiting` still waits for its own file, untouched. */
  | { ok: true; status: "not_same_file"; attempt: AttemptView; waiting: string }
  | { ok: false; fileName: string; error: AttemptErrorInfo };

/** Backoff: full jitter, `min(capMs, baseMs * 2^retry)`. */
export interface RetryOptions {
  /** Default 1000. */
  baseMs?: number;
  /** Default 30000. */
  capMs?: number;
  /** Consecutive retryable failures before `retries_exhausted` (default 10). */
  maxRetries?: number;
}

export interface UploaderOptions {
  /** The app's server, e.g. "https://photos.example" ("" for the page's origin). */
  apiBase: string;
  /** The event slug. */
  event: string;
  /** The event's guest code. */
  guestCode: string;
  /** Transfers at once across all files (default 3), and the authorizes they start with; while every slot is taken, the next files are authorized ahead (one per transfer on the wire), so each PUT starts the moment a slot frees; confirms go beside them, in as many slots of their own. */
  concurrency?: number;
  /** The app's own size limit, checked with the event's before any network. */
  maxFileBytes?: number;
  /** The app's own allowed types (patterns like "image/*"). */
  allowedTypes?: string[];
  /** At most this many files in one `add` (one pick): a pick over it is refused whole, each file with `too_many_files`, before anything is recorded or sent. */
  maxFilesPerPick?: number;
  /** At most this many bytes in one `add` (one pick), all its files together: a pick over it is refused whole, each file with `pick_too_large`, before anything is recorded or sent. */
  maxPickBytes?: number;
  /** Files up to this size are kept in IndexedDB to survive a reload (default 64 MiB). */
  keepFileMaxBytes?: number;
  /** At most this many bytes of files are kept in total (default 512 MiB). */
  keepFilesTotalBytes?: number;
  /** A file that goes up in one PUT is hashed whole (SHA-256) before its first byte leaves when it is at most this big (default 64 MiB, never above the server's multipart threshold): the same photo already shared in the event is then not sent again (a large file in parts is recognised only at confirm, after it was sent), and bytes changed since the pick are refused. 0 turns it off. */
  hashFileMaxBytes?: number;
  retry?: RetryOptions;
  /** IndexedDB database name (default "upload-once"). */
  dbName?: string;
}

/** An event's public description and restrictions. */
export interface EventInfo {
  slug: string;
  title: string;
  max_file_bytes: number;
  allowed_types: string[];
  moderation: "required" | "none";
  /** Where the same bytes are stored only once: `event` (from anyone in the event, the default), `guest` (from this guest session) or `none` (every upload is kept). */
  dedup: "none" | "guest" | "event";
  /** Files larger than this go up in parts (the server's setting); absent when the server does not say. */
  multipart_threshold?: number;
}

/** Where `serveUploader` serves: a dedicated worker's scope (`self`) or a `MessagePort`. */
export interface UploaderPort {
  postMessage(message: UploaderReply | UploaderEventMessage): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  start?(): void;
}

/** What an uploader served from a worker (`serveUploader`) reports in one answer: its getters and its attempts. */
export interface UploaderState {
  idle: boolean;
  busy: boolean;
  persisted: boolean | null;
  storageError: StorageErrorInfo | null;
  sessionError: SessionErrorInfo | null;
  event: EventInfo | null;
  attempts: AttemptView[];
}

/** Each call a page may post to a worker that runs `serveUploader`: its arguments and the value it answers with (the `Uploader` method of the same name). */
export interface UploaderCalls {
  open: { args: [UploaderOptions]; value: UploaderState };
  add: { args: [File[]]; value: AddOutcome[] };
  restore: { args: []; value: AttemptView[] };
  list: { args: []; value: AttemptView[] };
  get: { args: [string]; value: AttemptView | undefined };
  state: { args: []; value: UploaderState };
  file: { args: [string]; value: Blob | null };
  retry: { args: [string]; value: boolean };
  cancel: { args: [string]; value: boolean };
  pause: { args: [string]; value: boolean };
  resume: { args: [string]; value: boolean };
  forget: { args: [string]; value: undefined };
  remove: { args: [string]; value: undefined };
  refresh: { args: []; value: undefined };
  close: { args: []; value: undefined };
}

/** A call posted to the worker: `uploadOnce` numbers it, and its answer carries the same number. */
export type UploaderCall<K extends keyof UploaderCalls = keyof UploaderCalls> = K extends keyof UploaderCalls
  ? { uploadOnce: number; call: K; args: UploaderCalls[K]["args"] }
  : never;

/** The worker's answer to a call: its value, or the error the method would have thrown (`code` is stable). */
export type UploaderReply<K extends keyof UploaderCalls = keyof UploaderCalls> =
  | { uploadOnce: number; value: UploaderCalls[K]["value"] }
  | { uploadOnce: number; error: { code: UploadErrorCode | `http_${number}`; message: string } };

/** A message of the served uploader: `ready` once it listens (calls posted before it are lost: wait for it), then, once `open` has answered, its events (the `on…` listeners of `Uploader`). */
export type UploaderEventMessage =
  | { uploadOnceEvent: "ready"; value: null }
  | { uploadOnceEvent: "change"; value: AttemptView }
  | { uploadOnceEvent: "remove"; value: string }
  | { uploadOnceEvent: "storageError"; value: StorageErrorInfo | null }
  | { uploadOnceEvent: "session"; value: [EventInfo | null, SessionErrorInfo | null] }
  | { uploadOnceEvent: "busy"; value: boolean };

/** One PUT a hand-over gives to the Background Fetch (`Uploader.handOverNow`). */
export interface HandedOverPut {
  id: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  expires_at: string;
}

/** What `settleBackgroundFetch` reads of a `BackgroundFetchRegistration` (Chromium's; not in TypeScript's DOM types). */
export interface EndedBackgroundFetch {
  id: string;
  /** `""` while it runs. */
  result: "" | "success" | "failure";
  /** `"aborted"` when it was cancelled (in the browser's download UI, or by a page's `takeBack`). */
  failureReason: string;
}

/** What `settleBackgroundFetch` did with the attempts of one Background Fetch. */
export interface BackgroundFetchSettled {
  /** Attempts the fetch carried. */
  total: number;
  /** Confirmed (by this settle, or before it). */
  confirmed: number;
  /** Cancelled: the guest cancelled the fetch in the browser's download UI. */
  cancelled: number;
  /** Left for the next visit (not stored, or driven by an open page). */
  waiting: number;
}
