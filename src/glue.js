// Small browser glue the Rust side calls through wasm-bindgen. Each function
// wraps one callback-style browser API into a Promise; all decisions stay in
// Rust.

// Writes to one object store in one readwrite transaction with the given
// durability ("strict": `complete` fires only after the data is flushed to
// disk; "relaxed": once the browser has it; browsers without the option
// ignore the dictionary member): puts `values[i]` (under `keys[i]` when
// `keys` is an array, else at the store's key path), then deletes each of
// `deletes`. Resolves once the transaction commits. All or nothing: when a
// request cannot even be made (a value that cannot be cloned), the
// transaction is aborted and that error rejects.
export function writeStore(db, storeName, durability, values, keys, deletes) {
  let tx;
  try {
    tx = db.transaction(storeName, "readwrite", { durability });
  } catch (e) {
    return Promise.reject(e);
  }
  const done = transactionDone(tx);
  try {
    const store = tx.objectStore(storeName);
    values.forEach((value, i) => (keys ? store.put(value, keys[i]) : store.put(value)));
    deletes.forEach((key) => store.delete(key));
  } catch (e) {
    try { tx.abort(); } catch (_) { /* already finished */ }
    return done.then(() => Promise.reject(e), () => Promise.reject(e));
  }
  return done;
}

// Reads from one object store in its own transaction: `get` (of `key`),
// `getAll` or `getAllKeys`. Resolves with the request's result.
export function readStore(db, storeName, op, key) {
  try {
    const store = db.transaction(storeName).objectStore(storeName);
    return requestDone(op === "get" ? store.get(key) : store[op]());
  } catch (e) {
    return Promise.reject(e);
  }
}

// Resolves when the transaction commits, rejects with its error (a
// DOMException such as QuotaExceededError) when it aborts.
//
// A failed request's error event is left alone, so the transaction aborts:
// all or nothing. Cancelling it (preventDefault) would let the transaction
// commit without that write and report success; and in WebKit a
// transaction whose failed request was cancelled never settles at all
// (Safari private browsing refusing a Blob), so every later transaction on
// its stores would wait forever.
export function transactionDone(tx) {
  return new Promise((resolve, reject) => {
    let failed = null;
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error || failed || new DOMException("transaction aborted", "AbortError"));
    tx.onerror = (event) => {
      failed = failed || (event && event.target && event.target.error) || null;
    };
  });
}

// Resolves with an IDBRequest's result, rejects with its error.
export function requestDone(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = (event) => {
      if (event && event.preventDefault) event.preventDefault();
      reject(req.error || new DOMException("request failed", "UnknownError"));
    };
  });
}

// Sends `blob` with `xhr` (an unsent XMLHttpRequest): `method` to `url`
// with exactly the request headers in `headers` ([name, value] pairs),
// calling `onProgress(loaded, total)` as upload progress events arrive.
// Resolves with how it ended: "load", "error", "abort" or "timeout".
// Throws when the browser refuses the request outright.
export function sendBlob(xhr, method, url, headers, blob, onProgress) {
  const ended = new Promise((resolve) => {
    for (const kind of ["load", "error", "abort", "timeout"]) {
      xhr["on" + kind] = () => {
        // No progress after the end (the Rust callback is dropped then).
        xhr.upload.onprogress = null;
        resolve(kind);
      };
    }
  });
  xhr.upload.onprogress = (e) => onProgress(e.loaded, e.total);
  xhr.open(method, url);
  for (const [name, value] of headers) xhr.setRequestHeader(name, value);
  xhr.send(blob);
  return ended;
}

// Whether the Web Locks API exists here.
export function locksAvailable() {
  return typeof navigator !== "undefined" && !!navigator.locks && typeof navigator.locks.request === "function";
}

// Asks for the exclusive Web Lock `name`. `onState(true)` runs when this
// page holds it (held until the returned handle's `release()`);
// `onState(false)` runs at once when another page holds it, and the request
// then waits in line, so `onState(true)` follows when that page lets go.
export function requestLock(name, onState) {
  let release;
  let released = false;
  const held = new Promise((resolve) => { release = resolve; });
  // A request still waiting in line is withdrawn on release, and a callback
  // that races the release never reaches Rust (its closure is gone).
  const abort = new AbortController();
  const granted = () => {
    if (released) return undefined;
    onState(true);
    return held;
  };
  navigator.locks
    .request(name, { ifAvailable: true }, (lock) => {
      if (released) return undefined;
      if (lock) return granted();
      onState(false);
      navigator.locks.request(name, { signal: abort.signal }, granted).catch(() => {});
      return undefined;
    })
    .catch(() => { if (!released) onState(false); });
  return {
    release: () => {
      released = true;
      abort.abort();
      release();
    },
  };
}

// Stores the guest session under `key` in one transaction, unless another
// page stored a live one first: the value already there wins, except when it
// is missing or carries `staleToken` (a session the server no longer knows).
// Resolves with the session to use, so every page of a browser speaks as one
// guest.
export function putSessionUnlessPresent(db, storeName, key, value, staleToken) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(storeName, "readwrite", { durability: "strict" });
    const store = tx.objectStore(storeName);
    let kept = value;
    const get = store.get(key);
    get.onsuccess = () => {
      const current = get.result;
      if (current && current.token && current.token !== staleToken) kept = current;
      else store.put(value, key);
    };
    transactionDone(tx).then(() => resolve(kept), reject);
  });
}

// An AbortSignal that fires after `ms`, where the browser has
// AbortSignal.timeout (undefined elsewhere: no time limit).
export function timeoutSignal(ms) {
  return typeof AbortSignal !== "undefined" && typeof AbortSignal.timeout === "function" ? AbortSignal.timeout(ms) : undefined;
}

// The SHA-256 of bytes [start, end) of a Blob, as lowercase hex: only that
// slice is read (one part of a large file, never the whole file). Resolves
// with "" where WebCrypto is missing (a page not served over https or from
// localhost): the part then goes without a checksum.
//
// With `offPage`, a picked File or Blob is read and digested in a dedicated
// worker (made once, from a Blob of `hashing`'s own source), so a phone's
// page thread is left to the uploads: Chromium computes `digest` on the
// calling thread. A worker that cannot be made (no Worker, a CSP whose
// `worker-src` leaves out `blob:`), or that fails or falls silent, hands
// its hashes back to the page. Parts are hashed on the page (offPage
// false): there the pool below bounds the page's memory, which is what the
// parts' budget measures.
export function sha256Hex(blob, start, end, offPage) {
  const worker = offPage && typeof Blob === "function" && blob instanceof Blob && hashWorker();
  if (!worker) return pageHashing.sha256Hex(blob, start, end);
  return new Promise((resolve, reject) => {
    const id = hashNext++;
    hashCalls.set(id, { resolve, reject, blob, start, end });
    worker.postMessage([id, blob, start, end]);
    if (!hashSilence) hashSilence = setTimeout(() => giveUpHashWorker(worker), HASH_WORKER_SILENT_MS);
  });
}

// How hashes have been read, on the page and in the worker: reads made into
// reused buffers, how many of them reused one, and whether each still reads
// that way (tests and diagnostics).
export function hashReadStats() {
  const [pooled, reused, byob] = pageHashing.stats();
  return [pooled + workerStats[0], reused + workerStats[1], byob, workerStats[2], hashedInWorker];
}

// Makes the hash worker ahead of the first pick: its start (25–50 ms in
// Chromium here, a script loaded and run on a new thread) is then not on
// the way from the pick to the first file's first byte. On a timer, so it
// is not on the way to a usable uploader either.
export function prepareHashWorker() {
  setTimeout(hashWorker, 0);
}

// A hash worker that answers nothing for this long while hashes wait on it
// is given up, as one that fails is: a worker the browser ended without an
// `error` event would otherwise hold its files' authorizes for ever. Its
// longest answer, one whole file of up to `hashFileMaxBytes` (64 MiB by
// default) read after a stalled read's 2 s, takes far less on a phone.
const HASH_WORKER_SILENT_MS = 10000;
let hashSilence = 0; // the timer, while hashes wait on the worker

let hashWorkerMade; // undefined: not tried yet; null: none
let hashNext = 1;
let hashedInWorker = 0;
let workerStats = [0, 0, 1];
const hashCalls = new Map(); // id -> { resolve, reject, blob, start, end }

function hashWorker() {
  if (hashWorkerMade !== undefined) return hashWorkerMade;
  hashWorkerMade = blobWorker(`(${hashing})(self);`, (e) => {
    const [id, hex, pooled, reused, byob, name, message] = e.data;
    workerStats = [pooled, reused, byob];
    clearTimeout(hashSilence);
    hashSilence = hashCalls.size > 1 ? setTimeout(() => giveUpHashWorker(hashWorkerMade), HASH_WORKER_SILENT_MS) : 0;
    const call = hashCalls.get(id);
    if (!call) return;
    hashCalls.delete(id);
    if (typeof hex === "string") {
      hashedInWorker += 1;
      call.resolve(hex);
    } else {
      call.reject(new DOMException(message, name));
    }
  }, (worker, e) => {
    if (e && typeof e.preventDefault === "function") e.preventDefault();
    giveUpHashWorker(worker);
  });
  return hashWorkerMade;
}

// A hash worker that failed or fell silent: the page hashes from now on,
// the waiting ones first.
function giveUpHashWorker(worker) {
  if (!worker || hashWorkerMade !== worker) return;
  hashWorkerMade = null;
  clearTimeout(hashSilence);
  hashSilence = 0;
  worker.terminate();
  const waiting = [...hashCalls.values()];
  hashCalls.clear();
  for (const call of waiting) pageHashing.sha256Hex(call.blob, call.start, call.end).then(call.resolve, call.reject);
}

// A dedicated worker running `source`, made from a Blob (the pages' CSP
// allows `blob:` workers), answering `onMessage`; null where none can be
// made (no document, no Worker, or its construction refused). `onFail`
// gets the worker and the event when it fails later: Firefox reports a CSP
// refusal this way, and a script that throws too.
function blobWorker(source, onMessage, onFail) {
  if (typeof document === "undefined" || typeof Worker !== "function" || typeof Blob !== "function") return null;
  try {
    const worker = new Worker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })));
    worker.onmessage = onMessage;
    worker.onerror = (e) => onFail(worker, e);
    return worker;
  } catch (_) {
    return null;
  }
}

// Buffers the hashed bytes are read into, reused: `blob.arrayBuffer()` makes a
// new buffer for every part (8 MiB each, 128 for a gigabyte), garbage the
// moment its digest is taken, and V8 collects it late, so a large upload in
// parts grew the page's heap by 100 MiB and more. A byte stream's BYOB reader
// reads the slice straight into a buffer of ours instead, which goes back to
// the pool once WebCrypto has its copy of the bytes (`digest` copies its input
// when called). The pool holds a few buffers while hashing goes on (one per
// hash in flight: the driver hashes at most a few parts at once) and lets them
// go when the page stops hashing for a while. Where a Blob's stream has no
// BYOB reader, or for a slice too large to keep a buffer of, `arrayBuffer()`.
//
// Chromium (156) sometimes stops answering a BYOB read of a Blob made in the
// page (bytes in memory, not a file on disk) part-way, with no error: the
// read never settles. So a read that brings nothing for `BYOB_STALL_MS` is
// given up, that slice is read with `arrayBuffer()`, and so is the rest of
// that Blob (a stall costs its wait once per Blob, not per part); after a
// second Blob stalls in the page (a Blob read again from IndexedDB after a
// reload is a new object), every Blob is. A picked file, read from disk, has not
// been seen to stall.
// Detaching a read's buffer once hashed (`transfer(0)`) would free it at once,
// but broke Chromium's in-memory Blobs being stored in IndexedDB meanwhile
// (InvalidBlob); copying a default `stream()` reader's chunks into reused
// buffers held more, not less (its chunks are garbage too).
//
// Self-contained (it names nothing outside itself but the platform's
// globals), because its source is also the hash worker's script: `scope` is
// the worker's global there, which it then answers `[id, blob, start, end]`
// on; on the page it is null.
function hashing(scope) {
  const POOLED_MAX_BYTES = 16 * 1024 * 1024;
  const POOL_IDLE_BUFFERS = 4;
  const POOL_RELEASE_MS = 5000;
  const BYOB_STALL_MS = 2000;
  const STALLED = Symbol("stalled");
  let byobReads = true; // false once Blob streams have no BYOB reader here, or two stalled
  const stalledBlobs = new WeakSet();
  let stalledCount = 0; // distinct Blobs that stalled
  let pooledReads = 0;
  let reusedBuffers = 0;
  let idleBuffers = [];
  let releaseTimer = 0;

  async function sha256Hex(blob, start, end) {
    const subtle = typeof crypto !== "undefined" && crypto.subtle;
    if (!subtle) return "";
    const slice = blob.slice(start, end);
    const digest = byobReads && slice.size <= POOLED_MAX_BYTES && !stalledBlobs.has(blob)
      ? await digestThroughPool(subtle, blob, slice)
      : await digestWhole(subtle, slice);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function takeBuffer(size) {
    clearTimeout(releaseTimer);
    let best = -1;
    idleBuffers.forEach((b, i) => {
      if (b.byteLength >= size && (best < 0 || b.byteLength < idleBuffers[best].byteLength)) best = i;
    });
    if (best >= 0) {
      reusedBuffers += 1;
      return idleBuffers.splice(best, 1)[0];
    }
    // Rounded up to a MiB so that a last, shorter part or a file of about the
    // same size reuses it.
    return new ArrayBuffer(Math.max(1, Math.ceil(size / 1048576)) * 1048576);
  }

  function giveBack(buffer) {
    // A buffer a failed read left detached (its length is 0) is not kept.
    if (buffer && buffer.byteLength > 0) {
      idleBuffers.push(buffer);
      idleBuffers.sort((a, b) => b.byteLength - a.byteLength);
      idleBuffers.length = Math.min(idleBuffers.length, POOL_IDLE_BUFFERS);
    }
    clearTimeout(releaseTimer);
    releaseTimer = setTimeout(() => { idleBuffers = []; }, POOL_RELEASE_MS);
  }

  async function digestThroughPool(subtle, blob, slice) {
    const size = slice.size;
    if (size === 0) return subtle.digest("SHA-256", new Uint8Array(0));
    let reader;
    try {
      reader = slice.stream().getReader({ mode: "byob" });
    } catch (_) {
      byobReads = false; // this browser's Blob stream is not a byte stream
      return digestWhole(subtle, slice);
    }
    pooledReads += 1;
    let buffer = takeBuffer(size);
    try {
      let filled = 0;
      while (filled < size) {
        const read = await readWithin(reader, new Uint8Array(buffer, filled, size - filled), BYOB_STALL_MS);
        if (read === STALLED) {
          if (!stalledBlobs.has(blob)) {
            stalledBlobs.add(blob);
            stalledCount += 1;
            if (stalledCount >= 2) byobReads = false;
          }
          reader.cancel().catch(() => {});
          return digestWhole(subtle, slice);
        }
        const { value, done } = read;
        if (value) buffer = value.buffer; // the read moved our buffer here
        if (done) break;
        filled += value.byteLength;
      }
      if (filled !== size) throw new DOMException("the file ended before its size", "NotReadableError");
      reader.cancel().catch(() => {}); // its bytes are all read: let the stream go now
      return await subtle.digest("SHA-256", new Uint8Array(buffer, 0, size));
    } catch (e) {
      reader.cancel().catch(() => {});
      throw e;
    } finally {
      giveBack(buffer); // not kept if a stalled or failed read still holds it
    }
  }

  // The slice's digest from one new buffer of its bytes (`arrayBuffer()`).
  async function digestWhole(subtle, slice) {
    return subtle.digest("SHA-256", await slice.arrayBuffer());
  }

  // One read, or `STALLED` if it brings nothing within `ms`.
  function readWithin(reader, view, ms) {
    let timer;
    const stalled = new Promise((resolve) => { timer = setTimeout(() => resolve(STALLED), ms); });
    return Promise.race([reader.read(view), stalled]).finally(() => clearTimeout(timer));
  }

  const stats = () => [pooledReads, reusedBuffers, byobReads ? 1 : 0];
  if (scope) {
    scope.onmessage = (e) => {
      const [id, blob, start, end] = e.data;
      sha256Hex(blob, start, end).then(
        (hex) => scope.postMessage([id, hex, ...stats()]),
        (err) => scope.postMessage([id, null, ...stats(), String((err && err.name) || "Error"), String((err && err.message) || err)]),
      );
    };
  }
  return { sha256Hex, stats };
}
const pageHashing = hashing(null);

// Whether the browser still reads this file: a File picked from disk whose
// bytes changed (or that was removed) since the pick is refused by Chromium
// (NotReadableError) and WebKit. While the page is going away (a reload, a
// navigation) reads fail for that reason alone, and WebKit fails them before
// `pagehide`: a file is only unreadable if it still is half a second later
// (a page going away is gone by then, and answers nothing).
let leaving = false;
if (typeof addEventListener === "function") {
  addEventListener("pagehide", () => { leaving = true; });
  addEventListener("pageshow", () => { leaving = false; });
}
async function readsNow(blob) {
  try {
    await blob.slice(0, Math.min(1, blob.size)).arrayBuffer();
    return true;
  } catch (_) {
    return false;
  }
}
export async function readFailureIsReal() {
  await new Promise((resolve) => setTimeout(resolve, 500));
  return !leaving;
}
export async function isReadable(blob) {
  if (await readsNow(blob)) return true;
  await new Promise((resolve) => setTimeout(resolve, 500));
  return leaving || (await readsNow(blob));
}

// What this site may still store, from navigator.storage.estimate() (quota
// minus usage), or null where the browser does not say.
export async function storageRoom() {
  try {
    const storage = typeof navigator !== "undefined" && navigator.storage;
    if (!storage || typeof storage.estimate !== "function") return null;
    const { quota, usage } = await storage.estimate();
    return typeof quota === "number" && typeof usage === "number" ? Math.max(0, quota - usage) : null;
  } catch (_) {
    return null;
  }
}

// The driver's timers (backoff, renewal, polling, timeouts). A hidden page's
// timers are throttled: Chromium wakes them once a second, and once a minute
// when the page has been hidden for five minutes; a dedicated worker's timers
// are not. So in a page each wait is armed twice, on the page and in one small
// worker made from a Blob, and whichever fires first wakes the driver. Where
// no worker can be made (no Worker, or a Content-Security-Policy whose
// `worker-src` leaves out `blob:`), the page's timer alone does it. Inside a
// worker (an uploader run off the main thread) its own timers are used.
const WAKE_WORKER = "const t=new Map();onmessage=(e)=>{const[id,ms]=e.data;clearTimeout(t.get(id));t.delete(id);"
  + "if(ms>=0)t.set(id,setTimeout(()=>{t.delete(id);postMessage(id);},ms));};";
let wakeWorker; // undefined: not tried yet; null: none
let wakeNext = 1;
const wakes = new Map(); // id -> [callback, page timer]

function wakeClock() {
  if (wakeWorker !== undefined) return wakeWorker;
  // Failed after construction: the page's timers go on alone.
  wakeWorker = blobWorker(WAKE_WORKER, (e) => fireWake(e.data, true), (worker) => {
    if (wakeWorker === worker) wakeWorker = null;
  });
  return wakeWorker;
}

// Forgets wake `id` (its page timer cleared; its copy in the worker too,
// unless that copy is what fired). Returns its callback, or null when it
// had already fired or been cancelled.
function forgetWake(id, firedInWorker) {
  const wake = wakes.get(id);
  if (!wake) return null;
  wakes.delete(id);
  clearTimeout(wake[1]);
  if (!firedInWorker && wakeWorker) wakeWorker.postMessage([id, -1]);
  return wake[0];
}

// The wake `id` fired, in the worker or on the page: the first one calls back.
function fireWake(id, inWorker) {
  const callback = forgetWake(id, inWorker);
  if (callback) callback();
}

// Calls `callback` once, `ms` milliseconds from now (see above). Returns the
// id `cancelWake` takes.
export function wakeAfter(ms, callback) {
  const id = wakeNext++;
  const delay = Math.max(0, ms);
  wakes.set(id, [callback, setTimeout(() => fireWake(id, false), delay)]);
  const worker = wakeClock();
  if (worker) worker.postMessage([id, delay]);
  return id;
}

// Forgets a wake that has not fired (a fired one is already gone).
export function cancelWake(id) {
  forgetWake(id, false);
}

// Whether this page's waits are also armed in a worker (tests, diagnostics).
export function wakesInWorker() {
  return Boolean(wakeClock());
}

// `serveUploader` (src/remote.rs): serves one uploader to whoever posts to
// `port` (a worker's scope or a MessagePort). `open(options)` is
// `Uploader.open`. Calls are `{ uploadOnce: n, call, args }`, answered with
// `{ uploadOnce: n, value }` or `{ uploadOnce: n, error: { code, message } }`
// (an Error's own properties do not survive postMessage); once `open`
// answered, events follow as `{ uploadOnceEvent, value }`. It says `ready`
// first. Other messages are the app's.
const SERVED_CALLS = new Set(["add", "restore", "list", "get", "file", "retry", "cancel", "pause", "resume", "forget", "remove", "refresh"]);
const SERVED_EVENTS = { change: "onChange", remove: "onRemove", storageError: "onStorageError", busy: "onBusyChange" };

export function serveUploaderOn(port, open) {
  let uploader = null;
  let opening = false;
  const post = (message) => port.postMessage(message);
  const state = () => ({
    idle: uploader.idle, busy: uploader.busy, persisted: uploader.persisted, storageError: uploader.storageError,
    sessionError: uploader.sessionError, event: uploader.event, attempts: uploader.list(),
  });
  const refusal = (code, message) => Object.assign(new Error(message), { code });
  const carryOut = async (call, args) => {
    if (call === "open") {
      if (uploader || opening) throw refusal("invalid_options", "an uploader is already open in this worker");
      opening = true;
      try {
        uploader = await open(args[0]);
      } finally {
        opening = false;
      }
      for (const [name, on] of Object.entries(SERVED_EVENTS)) uploader[on]((value) => post({ uploadOnceEvent: name, value }));
      uploader.onSessionChange((event, error) => post({ uploadOnceEvent: "session", value: [event, error] }));
      return state();
    }
    if (!uploader) throw refusal("closed", "no uploader is open in this worker: send `open` first");
    if (call === "state") return state();
    if (call === "close") {
      const closing = uploader;
      uploader = null;
      closing.close();
      closing.free();
      return undefined;
    }
    if (!SERVED_CALLS.has(call)) throw refusal("invalid_options", `\`${call}\` is not a call of the uploader`);
    return uploader[call](...args);
  };
  port.addEventListener("message", async ({ data }) => {
    if (!data || typeof data.uploadOnce !== "number") return;
    const answer = { uploadOnce: data.uploadOnce };
    try {
      answer.value = await carryOut(String(data.call), Array.isArray(data.args) ? data.args : []);
    } catch (e) {
      answer.error = { code: (e && typeof e.code === "string") ? e.code : "invalid_options", message: String((e && e.message) || e) };
    }
    post(answer);
  });
  if (typeof port.start === "function") port.start();
  // A page's calls posted before this ran (while the worker loaded the
  // package) reached no listener: it waits for this before its first.
  post({ uploadOnceEvent: "ready", value: null });
}

// ------------------------------------------- Background Fetch (issue 33) ----
// `handOver`, `takeBack` and `settleBackgroundFetch` (src/remote.rs): JS over
// the `Uploader` class and its hand-over steps (src/client/background.rs).
// A fetch's id is `upload-once|1|<db>|<api>|<event>|<code>|<ids>|<n>`: the
// service worker opens the same uploader from it.

const FETCH_PREFIX = "upload-once|1|";
/** At most this many bytes go to one Background Fetch (they are copied into memory: see below); the rest stays with the page. */
const HAND_OVER_MAX_BYTES = 256 * 1024 * 1024;
/** Where a page notes a fetch it took back: its abort is not the guest's cancel. */
const TAKEN_BACK = "upload-once-background";
const takenBackKey = (id) => `/__upload-once/taken-back/${encodeURIComponent(id)}`;

function hasBackgroundFetch(registration) {
  return !!(registration && registration.backgroundFetch && typeof registration.backgroundFetch.fetch === "function");
}

function parseFetchId(id) {
  const fields = typeof id === "string" && id.startsWith(FETCH_PREFIX) ? id.slice(FETCH_PREFIX.length).split("|") : [];
  if (fields.length !== 6) return null;
  try {
    const [db, api, event, code] = fields.slice(0, 4).map(decodeURIComponent);
    return { owner: [db, api, event, code], ids: fields[4].split(",") };
  } catch {
    return null;
  }
}

/** Resolves once `done()` holds (asked at each of the uploader's changes, and every 250 ms), or after `ms`. */
function until(uploader, done, ms) {
  return new Promise((resolve) => {
    const stops = [];
    const check = () => {
      if (!done()) return;
      for (const stop of stops) stop();
      resolve();
    };
    stops.push(uploader.onChange(check), uploader.onBusyChange(check));
    const poll = setInterval(check, 250);
    const limit = setTimeout(() => { done = () => true; check(); }, ms);
    stops.push(() => clearInterval(poll), () => clearTimeout(limit));
    check();
  });
}

export async function handOverWith(uploader, registration, title) {
  if (!hasBackgroundFetch(registration)) return [];
  uploader.prepareHandOver();
  await until(uploader, () => uploader.handOverReady, 10_000);
  const puts = uploader.handOverNow();
  const ids = puts.map((p) => p.id);
  // Stored as handed over and let go (not driven here), or taken back
  // at once (their write failed).
  await until(uploader, () => ids.every((id) => { const a = uploader.get(id); return !a || !a.inBackground || !a.drivenHere; }), 10_000);
  const sent = [], requests = [];
  let bytes = 0;
  for (const put of puts) {
    const file = uploader.get(put.id)?.inBackground ? await uploader.file(put.id) : null;
    if (!file || bytes + file.size > HAND_OVER_MAX_BYTES) continue;
    bytes += file.size;
    // Chromium's Background Fetch sends no bytes of a Blob backed by a file
    // on disk (a picked `File`): the bytes go in memory (the files handed
    // over go up in one PUT each, so each is at most the multipart size).
    const body = new Blob([await file.arrayBuffer()], { type: file.type });
    requests.push(new Request(put.url, { method: put.method, headers: put.headers, body, mode: "cors", credentials: "omit" }));
    sent.push(put.id);
  }
  if (sent.length) {
    const owner = uploader.handOverOwner.map(encodeURIComponent).join("|");
    try {
      await registration.backgroundFetch.fetch(`${FETCH_PREFIX}${owner}|${sent.join(",")}|${crypto.randomUUID()}`, requests, { title });
    } catch (err) {
      console.warn("upload-once: the browser refused the Background Fetch:", err);
      sent.length = 0;
    }
  }
  const left = ids.filter((id) => !sent.includes(id));
  if (left.length) uploader.takeBackNow(left);
  return sent;
}

export async function takeBackWith(uploader, registration) {
  if (hasBackgroundFetch(registration)) {
    const [db, api, event] = uploader.handOverOwner;
    for (const id of await registration.backgroundFetch.getIds()) {
      const owner = parseFetchId(id)?.owner;
      const fetch = owner && owner[0] === db && owner[1] === api && owner[2] === event && (await registration.backgroundFetch.get(id));
      if (!fetch) continue;
      const cache = await caches.open(TAKEN_BACK);
      await cache.put(takenBackKey(id), new Response(""));
      // Already over: no abort event will read the note.
      if (!(await fetch.abort())) await cache.delete(takenBackKey(id));
    }
  }
  return uploader.takeBackNow();
}

export async function settleWith(registration, open) {
  const handed = parseFetchId(registration.id);
  if (!handed || registration.result === "") return null;
  const aborted = registration.failureReason === "aborted";
  if (aborted && (await (await caches.open(TAKEN_BACK)).delete(takenBackKey(registration.id)))) return null;
  const [dbName, apiBase, event, guestCode] = handed.owner;
  const uploader = await open({ apiBase, event, guestCode, dbName });
  try {
    await uploader.restoreOnly(handed.ids);
    // The guest cancelled it in the browser's download UI: a cancel there
    // is a cancel here, for what is still handed over.
    if (aborted) for (const id of handed.ids) if (uploader.get(id)?.inBackground) await uploader.cancel(id);
    await until(uploader, () => uploader.idle, 60_000);
    const settled = { total: handed.ids.length, confirmed: 0, cancelled: 0, waiting: 0 };
    for (const id of handed.ids) {
      const a = uploader.get(id);
      if (a?.confirmation === "confirmed") settled.confirmed++;
      else if (a?.error?.code === "cancelled") settled.cancelled++;
      else settled.waiting++;
    }
    return settled;
  } finally {
    uploader.close();
    uploader.free();
  }
}
