// Scenarios the benchmark driver (bench/run.mjs) calls with page.evaluate.
// Each returns plain numbers; the driver interleaves rounds and takes medians.
import init, { Uploader } from "/pkg/upload_once.js";

const wasm = await init();
const api = location.origin;

/**
 * Resolves once `predicate` holds for the attempts, tracked from the views
 * onChange delivers (an app renders one card per change; it does not rebuild
 * the whole list each time).
 */
function waitFor(uploader, predicate) {
  const views = new Map(uploader.list().map((a) => [a.id, a]));
  return new Promise((resolve) => {
    let done = false;
    const check = () => {
      if (done) return;
      const list = [...views.values()];
      if (predicate(list)) {
        done = true;
        resolve(list);
      }
    };
    uploader.onChange((a) => {
      views.set(a.id, a);
      if (!done && (a.terminal || views.size <= 1)) check();
    });
    check();
  });
}

let blob = null;
/** Makes (once) the Blob every transfer round sends. */
window.makeBlob = (bytes) => {
  if (!blob || blob.size !== bytes) {
    const chunk = new Uint8Array(1 << 20);
    for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31) & 0xff;
    const parts = [];
    for (let n = 0; n < bytes; n += chunk.length) parts.push(chunk.subarray(0, Math.min(chunk.length, bytes - n)));
    blob = new Blob(parts, { type: "application/octet-stream" });
  }
  return blob.size;
};

/**
 * Sends the file picked in `#pick` (a file on disk, as a guest's is) in
 * every later round instead of an in-memory Blob: Chromium holds Blobs made
 * in the page in memory, and reads of large ones fail part-way.
 */
window.usePickedFile = () => {
  blob = document.getElementById("pick").files[0];
  return blob.size;
};

let round = 0;
/** Sends the Blob through upload-once, from add() until confirmed. */
window.transferUploadOnce = async ({ event, code }) => {
  round += 1;
  const uploader = await Uploader.open({ apiBase: api, event, guestCode: code, dbName: `bench-t-${round}-${Date.now()}` });
  const file = new File([blob], `round-${round}.bin`, { type: "image/png", lastModified: round });
  const t0 = performance.now();
  await uploader.add([file]);
  await waitFor(uploader, (l) => l.length === 1 && l[0].confirmation === "confirmed");
  const ms = performance.now() - t0;
  uploader.close();
  return ms;
};

/** The baseline: a bare XMLHttpRequest PUT of the same Blob to the same sink. */
window.transferBareXhr = async ({ url, headers }) => {
  const t0 = performance.now();
  await new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", url);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.onload = () => (xhr.status < 300 ? resolve() : reject(new Error(`PUT ${xhr.status}`)));
    xhr.onerror = () => reject(new Error("network"));
    xhr.send(new File([blob], "bare.bin", { type: headers["Content-Type"] }));
  });
  return performance.now() - t0;
};

/** Uploads `bytes` through upload-once and samples memory meanwhile. */
window.memoryDuringUpload = async ({ event, code, bytes }) => {
  if (!blob || blob.size !== bytes) window.makeBlob(bytes);
  const uploader = await Uploader.open({ apiBase: api, event, guestCode: code, dbName: `bench-m-${Date.now()}`, keepFileMaxBytes: 0 });
  const wasmBefore = wasm.memory.buffer.byteLength;
  const heap = () => (performance.memory ? performance.memory.usedJSHeapSize : 0);
  if (window.gc) window.gc();
  const heapBefore = heap();
  let wasmPeak = wasmBefore;
  let heapPeak = heapBefore;
  const timer = setInterval(() => {
    wasmPeak = Math.max(wasmPeak, wasm.memory.buffer.byteLength);
    heapPeak = Math.max(heapPeak, heap());
  }, 20);
  await uploader.add([new File([blob], "big.bin", { type: "image/png" })]);
  await waitFor(uploader, (l) => l.length === 1 && l[0].confirmation === "confirmed");
  clearInterval(timer);
  wasmPeak = Math.max(wasmPeak, wasm.memory.buffer.byteLength);
  uploader.close();
  return { wasmGrowth: wasmPeak - wasmBefore, heapGrowth: heapPeak - heapBefore, wasmBefore, heapBefore };
};

/** add() of `n` small files: time until every attempt is durably recorded. */
window.addMany = async ({ event, code, n }) => {
  const uploader = await Uploader.open({ apiBase: api, event, guestCode: code, dbName: `bench-a-${Date.now()}-${Math.random()}`, concurrency: 1 });
  const files = Array.from({ length: n }, (_, i) => new File([new Uint8Array(64)], `small-${i}.png`, { type: "image/png", lastModified: i }));
  const t0 = performance.now();
  const outcomes = await uploader.add(files);
  const ms = performance.now() - t0;
  uploader.close();
  if (outcomes.length !== n || !outcomes.every((o) => o.ok)) throw new Error("add refused files");
  return ms;
};

/** Writes attempt records straight into IndexedDB in the stored format. */
window.seedRecords = async ({ db, event, session, attempts }) => {
  // Let the library create its schema (and store the session) first.
  const u = await Uploader.open({ apiBase: api, event, guestCode: session.code, dbName: db });
  u.close();
  const idb = await new Promise((resolve, reject) => {
    const r = indexedDB.open(db);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  await new Promise((resolve, reject) => {
    const tx = idb.transaction(["attempts", "meta"], "readwrite");
    tx.objectStore("meta").put({ token: session.token, expires_at: session.expires_at, event: session.event }, `session:${api}|${event}`);
    const store = tx.objectStore("attempts");
    const now = Date.now();
    attempts.forEach((a, i) => store.put({
      v: 1, id: a.id, event, blob_key: a.id, sha256: null, object_key: a.object_key, upload: null,
      expires_at: a.expires_at, transfer: "uploaded", confirmation: "unconfirmed", moderation: "unknown",
      media: null, error: null, retries: 0, next_retry_at: null, step: "confirm",
      file: { name: a.filename, size: a.size, content_type: "image/png", last_modified: i },
      created_at: now + i, updated_at: now + i, revision: 2, replaces: null, replaced_by: null,
    }));
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  idb.close();
  return attempts.length;
};

/** From Uploader.open to every seeded attempt shown confirmed. */
window.restoreAll = async ({ db, event, code, n }) => {
  const t0 = performance.now();
  const uploader = await Uploader.open({ apiBase: api, event, guestCode: code, dbName: db });
  const done = waitFor(uploader, (l) => l.length === n && l.every((a) => a.confirmation === "confirmed"));
  await uploader.restore();
  await done;
  const ms = performance.now() - t0;
  uploader.close();
  return ms;
};

document.getElementById("status").textContent = "ready";
document.body.dataset.ready = "1";

/** Baseline for add(): the same records put straight into IndexedDB, one strict transaction. */
window.bareIdbPut = async ({ n }) => {
  const name = `bench-bare-${Date.now()}-${Math.random()}`;
  const idb = await new Promise((resolve, reject) => {
    const r = indexedDB.open(name, 1);
    r.onupgradeneeded = () => r.result.createObjectStore("attempts", { keyPath: "id" });
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const t0 = performance.now();
  await new Promise((resolve, reject) => {
    const tx = idb.transaction("attempts", "readwrite", { durability: "strict" });
    const store = tx.objectStore("attempts");
    for (let i = 0; i < n; i++) {
      store.put({ id: crypto.randomUUID(), name: `small-${i}.png`, size: 64, type: "image/png", lastModified: i, created_at: Date.now() });
    }
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  const ms = performance.now() - t0;
  idb.close();
  indexedDB.deleteDatabase(name);
  return ms;
};

/** Baseline for restore: the status requests alone (batches of 500), bare fetch. */
window.bareStatus = async ({ token, ids }) => {
  const t0 = performance.now();
  for (let i = 0; i < ids.length; i += 500) {
    const res = await fetch(`${api}/v1/attempts/status`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ids: ids.slice(i, i + 500) }),
    });
    await res.json();
  }
  return performance.now() - t0;
};

/** Baseline for memory: a bare XHR PUT of the same Blob. */
window.memoryDuringBareXhr = async ({ url, headers }) => {
  const heap = () => (performance.memory ? performance.memory.usedJSHeapSize : 0);
  if (window.gc) window.gc();
  const heapBefore = heap();
  let heapPeak = heapBefore;
  const timer = setInterval(() => { heapPeak = Math.max(heapPeak, heap()); }, 20);
  await window.transferBareXhr({ url, headers });
  clearInterval(timer);
  return { heapGrowth: heapPeak - heapBefore };
};

/** `n` files of `bytes` fresh random bytes each (the server stores the same bytes once per event). */
function randomFiles(n, bytes, prefix) {
  const files = [];
  for (let i = 0; i < n; i++) {
    const b = new Uint8Array(bytes);
    for (let o = 0; o < bytes; o += 65536) crypto.getRandomValues(b.subarray(o, Math.min(bytes, o + 65536)));
    files.push(new File([b], `${prefix}-${i}.png`, { type: "image/png", lastModified: Date.now() + i }));
  }
  return files;
}

/** Reads the stored record of attempt `id` (to see whether its SHA-256 was taken). */
async function storedRecord(dbName, id) {
  const idb = await new Promise((resolve, reject) => {
    const r = indexedDB.open(dbName);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const record = await new Promise((resolve, reject) => {
    const get = idb.transaction("attempts").objectStore("attempts").get(id);
    get.onsuccess = () => resolve(get.result);
    get.onerror = () => reject(get.error);
  });
  idb.close();
  return record;
}

/**
 * add() of `n` new files of `bytes` each → all confirmed, with whole-file
 * hashing (the default) or without (`hashFileMaxBytes: 0`). Also says
 * whether the files were hashed (the stored record holds the SHA-256).
 */
window.hashRound = async ({ event, code, n, bytes, hash }) => {
  const files = randomFiles(n, bytes, hash ? "hashed" : "plain");
  const dbName = `bench-h-${Date.now()}-${Math.random()}`;
  const uploader = await Uploader.open({ apiBase: api, event, guestCode: code, dbName, ...(hash ? {} : { hashFileMaxBytes: 0 }) });
  const t0 = performance.now();
  const outcomes = await uploader.add(files);
  const list = await waitFor(uploader, (l) => l.length === n && l.every((a) => a.confirmation === "confirmed"));
  const ms = performance.now() - t0;
  uploader.close();
  if (!outcomes.every((o) => o.ok && o.status === "new")) throw new Error("add refused files or found them already shared");
  if (list.some((a) => a.duplicateOf)) throw new Error("a file was found already shared: the bytes must be new each round");
  const record = await storedRecord(dbName, list[0].id);
  indexedDB.deleteDatabase(dbName);
  return { ms, hashed: Boolean(record && record.sha256) };
};

/**
 * SHA-256 throughput of WebCrypto in this page, in MiB/s (median of `reps`):
 * `digest` of an ArrayBuffer already in memory (the reference), and the
 * library's hash path, `blob.slice().arrayBuffer()` then `digest`, for a
 * Blob of `bytes` and for a 4 MiB File.
 */
window.sha256Throughput = async ({ bytes, reps }) => {
  const buf = new Uint8Array(bytes);
  for (let o = 0; o < bytes; o += 65536) crypto.getRandomValues(buf.subarray(o, Math.min(bytes, o + 65536)));
  const big = new Blob([buf]);
  const small = randomFiles(1, 4 << 20, "t")[0];
  const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  const time = async (f, size) => {
    const ms = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      await f();
      ms.push(performance.now() - t0);
    }
    return size / (1 << 20) / (med(ms) / 1000);
  };
  return {
    digest: await time(() => crypto.subtle.digest("SHA-256", buf), bytes),
    blob: await time(async () => crypto.subtle.digest("SHA-256", await big.slice(0, bytes).arrayBuffer()), bytes),
    file4: await time(async () => crypto.subtle.digest("SHA-256", await small.slice(0, small.size).arrayBuffer()), small.size),
  };
};
