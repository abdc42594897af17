// Each file's trace, taken from outside the uploaders (bench/phone_uplink.mjs):
// the browser APIs they all use are wrapped before any of them loads, so the
// same instruments time upload-once, the bare protocol and Uppy alike, and
// nothing in the library is changed for it. Per attempt id, the first time
// (performance.now(), ms) of:
//   durable     the IndexedDB transaction that first put its record completed
//   kept        the transaction that put its file's bytes completed
//   hashed      the SHA-256 that went with its authorize resolved (on the page,
//               or answered by a worker)
//   authSent / authorized   its authorize request / answer
//   putStart    its storage PUT was sent (XHR send)
//   firstByte   the PUT's first upload progress event with bytes sent
//   lastByte    the PUT's upload body finished (upload `load`)
//   stored      the PUT's answer
//   confirmSent / confirmed  its confirm request / answer
// and counts of IndexedDB transactions by store and durability.
(() => {
  const now = () => performance.now();
  const trace = { files: new Map(), digests: new Map(), urls: new Map(), transactions: [] };
  window.__trace = trace;
  const file = (id) => {
    let f = trace.files.get(id);
    if (!f) trace.files.set(id, (f = { id }));
    return f;
  };
  const mark = (id, key, at = now()) => {
    const f = file(id);
    if (f[key] === undefined) f[key] = at;
  };

  // IndexedDB: records ("attempts") and kept files ("blobs", keyed by the
  // attempt's blob key, which is its id for a new attempt).
  const seen = new WeakSet();
  const put = IDBObjectStore.prototype.put;
  IDBObjectStore.prototype.put = function (value, key) {
    const request = put.apply(this, arguments);
    const tx = this.transaction;
    const store = this.name;
    const id = store === "attempts" && value && typeof value.id === "string" ? value.id : store === "blobs" && typeof key === "string" ? key : null;
    if (id) tx.addEventListener("complete", () => mark(id, store === "attempts" ? "durable" : "kept"));
    if (!seen.has(tx)) {
      seen.add(tx);
      const entry = { store, durability: tx.durability ?? "default", start: now(), puts: 0 };
      trace.transactions.push(entry);
      tx.addEventListener("complete", () => { entry.end = now(); });
    }
    trace.transactions.at(-1).puts += 1;
    return request;
  };

  // One-byte reads (the library's check that a picked file still reads,
  // before its PUT): how long each waited.
  trace.probes = [];
  const arrayBuffer = Blob.prototype.arrayBuffer;
  Blob.prototype.arrayBuffer = function () {
    const start = now();
    const out = arrayBuffer.apply(this, arguments);
    if (this.size <= 1) out.then(() => trace.probes.push({ start, ms: now() - start }), (e) => trace.probes.push({ start, ms: now() - start, failed: String(e) }));
    return out;
  };

  // The storage estimate (navigator.storage.estimate()).
  trace.estimates = [];
  if (typeof StorageManager !== "undefined") {
    const estimate = StorageManager.prototype.estimate;
    StorageManager.prototype.estimate = async function () {
      const start = now();
      try { return await estimate.apply(this, arguments); } finally { trace.estimates.push({ start, ms: now() - start }); }
    };
  }

  // SHA-256: each digest's hex, matched with the authorize that carries it.
  const digest = SubtleCrypto.prototype.digest;
  SubtleCrypto.prototype.digest = async function () {
    const out = await digest.apply(this, arguments);
    const hex = Array.from(new Uint8Array(out), (b) => b.toString(16).padStart(2, "0")).join("");
    if (!trace.digests.has(hex)) trace.digests.set(hex, now());
    return out;
  };

  // A digest answered by a worker (upload-once hashes a whole file in its
  // hash worker): any worker message that carries a 64-hex string, timed
  // when the page gets it. The emulated CPU slowdown (CDP) throttles only
  // the page's thread, so a worker runs at this machine's speed.
  const Worker0 = window.Worker;
  if (typeof Worker0 === "function") {
    window.Worker = class extends Worker0 {
      constructor(...args) {
        super(...args);
        this.addEventListener("message", (e) => {
          const hex = Array.isArray(e.data) ? e.data.find((x) => typeof x === "string" && /^[0-9a-f]{64}$/.test(x)) : null;
          if (hex && !trace.digests.has(hex)) trace.digests.set(hex, now());
        });
      }
    };
  }

  // The API, through fetch: authorize (POST …/attempts) and confirm.
  const fetch0 = window.fetch;
  window.fetch = async function (input, init) {
    const request = new Request(input, init);
    const path = new URL(request.url, location.href).pathname;
    const sent = now();
    let id = null;
    let kind = null;
    if (request.method === "POST" && /\/v1\/events\/[^/]+\/attempts$/.test(path)) {
      kind = "auth";
      try {
        const body = JSON.parse(await request.clone().text());
        id = body.id;
        if (body.sha256 && trace.digests.has(body.sha256)) mark(id, "hashed", trace.digests.get(body.sha256));
      } catch {}
    } else if (request.method === "POST" && /\/v1\/attempts\/[^/]+\/confirm$/.test(path)) {
      kind = "confirm";
      id = path.split("/")[3];
    }
    if (id) mark(id, kind === "auth" ? "authSent" : "confirmSent", sent);
    const response = await fetch0.call(this, request);
    if (id && kind === "auth") {
      try {
        const body = await response.clone().json();
        if (body.upload && body.upload.url) trace.urls.set(new URL(body.upload.url, location.href).href, id);
      } catch {}
      mark(id, "authorized");
    } else if (id) {
      mark(id, "confirmed");
    }
    return response;
  };

  // Storage PUTs, through XMLHttpRequest (fetch cannot report upload progress).
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    this.__traceUrl = method.toUpperCase() === "PUT" ? new URL(url, location.href).href : null;
    return open.apply(this, arguments);
  };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function () {
    const id = this.__traceUrl && trace.urls.get(this.__traceUrl);
    if (id) {
      mark(id, "putStart");
      this.upload.addEventListener("progress", (e) => { if (e.loaded > 0) mark(id, "firstByte"); });
      this.upload.addEventListener("load", () => mark(id, "lastByte"));
      this.addEventListener("load", () => mark(id, "stored"));
    }
    return send.apply(this, arguments);
  };
})();
