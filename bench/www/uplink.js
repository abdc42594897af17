// The phone-uplink benchmark's page (bench/phone_uplink.mjs): one whole job,
// files picked in #pick → every file's media confirmed, through one of four
// uploaders against the same reference server, three requests at once:
//   bare     the protocol by hand: authorize (fetch), XHR PUT, confirm; no
//            record, no kept copy, no hash (the floor any uploader adds to)
//   once     upload-once (the package in pkg/)
//   uppy     @uppy/core + @uppy/aws-s3 (its signRequest authorizes; its
//            upload-success confirms)
//   uppy-gr  the same + @uppy/golden-retriever (files kept in IndexedDB for
//            a reload, as upload-once keeps them)
// bench/www/trace.js, loaded first, traces each file (window.__trace).
import init, { Uploader } from "/pkg/upload_once.js";
import { Uppy, AwsS3, GoldenRetriever } from "./uppy.bundle.js";

await init();
const api = location.origin;
const CONCURRENCY = 3;

async function json(response) {
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
  return response.json();
}

/** The guest session, as every variant's page would hold it before the pick. */
async function join(event, code) {
  const s = await json(await fetch(`${api}/v1/events/${event}/sessions`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ guest_code: code }),
  }));
  return s.session_token;
}

function authorize(token, event, file, id = crypto.randomUUID()) {
  return fetch(`${api}/v1/events/${event}/attempts`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ id, filename: file.name, size: file.size, content_type: file.type || "application/octet-stream" }),
  }).then(json);
}

function confirm(token, id, file) {
  return fetch(`${api}/v1/attempts/${id}/confirm`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "idempotency-key": id, "content-type": "application/json" },
    body: JSON.stringify({ size: file.size, content_type: file.type || "application/octet-stream" }),
  }).then(json);
}

function xhrPut(upload, file) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(upload.method ?? "PUT", upload.url);
    for (const [k, v] of Object.entries(upload.headers ?? {})) xhr.setRequestHeader(k, v);
    xhr.onload = () => (xhr.status < 300 ? resolve() : reject(new Error(`PUT ${xhr.status}`)));
    xhr.onerror = () => reject(new Error("network"));
    xhr.send(file);
  });
}

/** Each variant: `prepare` runs before the pick (as a page does at load), `run(files)` from the pick to all confirmed. */
const variants = {
  async bare({ event, code }) {
    const token = await join(event, code);
    return async (files) => {
      let next = 0;
      const worker = async () => {
        while (next < files.length) {
          const file = files[next++];
          const a = await authorize(token, event, file);
          await xhrPut(a.upload, file);
          await confirm(token, a.id, file);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    };
  },

  once: (ctx) => onceVariant(ctx, {}),
  // Diagnostics (not in the default run): what keeping and hashing cost.
  "once-nokeep": (ctx) => onceVariant(ctx, { keepFileMaxBytes: 0 }),
  "once-nohash": (ctx) => onceVariant(ctx, { hashFileMaxBytes: 0 }),
  "once-neither": (ctx) => onceVariant(ctx, { keepFileMaxBytes: 0, hashFileMaxBytes: 0 }),

  uppy: (ctx) => uppyVariant(ctx, false),
  "uppy-gr": (ctx) => uppyVariant(ctx, true),
};

async function onceVariant({ event, code, db }, options) {
  const uploader = await Uploader.open({ apiBase: api, event, guestCode: code, dbName: db, concurrency: CONCURRENCY, ...options });
  if (!uploader.event) await new Promise((resolve) => uploader.onSessionChange((ev) => ev && resolve()));
  return async (files) => {
    const views = new Map();
    const all = new Promise((resolve, reject) => {
      uploader.onChange((a) => {
        views.set(a.id, a);
        if (a.terminal && a.confirmation !== "confirmed") reject(new Error(`${a.fileName}: ${a.confirmation} ${JSON.stringify(a.error)}`));
        const list = [...views.values()];
        if (list.length === files.length && list.every((v) => v.confirmation === "confirmed")) resolve(list);
      });
    });
    const outcomes = await uploader.add(files);
    if (!outcomes.every((o) => o.ok && o.status === "new")) throw new Error(`add: ${JSON.stringify(outcomes.map((o) => o.status ?? o.error))}`);
    const list = await all;
    window.__kept = list.filter((v) => v.fileKept).length;
    uploader.close();
  };
}

async function uppyVariant({ event, code }, goldenRetriever) {
  const token = await join(event, code);
  const attempts = new Map();
  const uppy = new Uppy({ autoProceed: true });
  uppy.use(AwsS3, {
    shouldUseMultipart: false,
    limit: CONCURRENCY,
    // The key is Uppy's file id: the app's server authorizes that file.
    generateObjectKey: (file) => file.id,
    signRequest: async ({ key }) => {
      const file = uppy.getFile(key);
      const a = await authorize(token, event, file.data);
      attempts.set(key, a.id);
      return { url: a.upload.url, headers: a.upload.headers };
    },
  });
  if (goldenRetriever) uppy.use(GoldenRetriever, { serviceWorker: false });
  return async (files) => {
    const confirms = [];
    const done = new Promise((resolve, reject) => {
      uppy.on("upload-success", (file) => confirms.push(confirm(token, attempts.get(file.id), file.data)));
      uppy.on("upload-error", (file, error) => reject(error));
      uppy.on("complete", (result) => (result.failed.length ? reject(new Error("failed")) : resolve()));
    });
    for (const file of files) uppy.addFile({ name: file.name, type: file.type, data: file });
    await done;
    await Promise.all(confirms);
    uppy.destroy();
  };
}

/**
 * Prepares `variant`, then waits for the pick in #pick: resolves with the
 * time from the input's change event to the last file confirmed (ms).
 */
window.runVariant = async (variant, ctx) => {
  const run = await variants[variant](ctx);
  const input = document.getElementById("pick");
  const picked = new Promise((resolve) => input.addEventListener("change", () => resolve(performance.now()), { once: true }));
  window.__armed = true;
  const t0 = await picked;
  window.__trace.t0 = t0;
  await run([...input.files]);
  return performance.now() - t0;
};

/** Each file's trace, in ms from the pick, in the order their authorizes went. */
window.traceOf = () => {
  const t0 = window.__trace.t0;
  const rel = (x) => (x === undefined ? null : Math.round(x - t0));
  const files = [...window.__trace.files.values()].filter((f) => f.authSent !== undefined && f.authSent >= t0);
  files.sort((a, b) => a.authSent - b.authSent);
  const keys = ["durable", "kept", "hashed", "authSent", "authorized", "putStart", "firstByte", "lastByte", "stored", "confirmSent", "confirmed"];
  return {
    files: files.map((f) => Object.fromEntries(keys.map((k) => [k, rel(f[k])]))),
    transactions: window.__trace.transactions.filter((t) => t.start >= t0).map((t) => ({ ...t, start: rel(t.start), end: rel(t.end) })),
    kept: window.__kept ?? null,
    estimates: window.__trace.estimates.filter((p) => p.start >= t0).map((p) => ({ start: rel(p.start), ms: Math.round(p.ms) })),
    probes: window.__trace.probes.filter((p) => p.start >= t0).map((p) => ({ ...p, start: rel(p.start), ms: Math.round(p.ms) })),
  };
};

document.body.dataset.ready = "1";
