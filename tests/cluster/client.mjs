// A client of the cluster's API, from a chosen loopback address (Linux
// routes all of 127.0.0.0/8 to loopback), so tests can be several guests.
import http from "node:http";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { photo } from "../e2e/harness.mjs";

/** One JSON request: `{ status, body }`. */
export function request(base, method, path, { token, body, headers = {}, from } = {}) {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, {
      method, localAddress: from, agent: false,
      headers: {
        ...(payload ? { "content-type": "application/json", "content-length": payload.length } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers,
      },
    }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        let parsed = text;
        try { parsed = JSON.parse(text); } catch {}
        resolve({ status: res.statusCode, body: parsed });
      });
    });
    req.on("error", reject);
    req.end(payload);
  });
}

/** A request that must succeed: its body. */
export async function ok(base, method, path, options) {
  const res = await request(base, method, path, options);
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A guest session of the event. */
export async function session(base, ev, from) {
  return (await ok(base, "POST", `/v1/events/${ev.event.slug}/sessions`, { body: { guest_code: ev.guest_code }, from })).session_token;
}

/** Authorizes one photo (a small one by default): `{ id, bytes, attempt }`. */
export async function authorize(base, ev, token, seed, bytes = photo(seed, 20_000, 64, 48)) {
  const id = randomUUID();
  const attempt = await ok(base, "POST", `/v1/events/${ev.event.slug}/attempts`, {
    token, body: { id, filename: `p${seed}.png`, size: bytes.length, content_type: "image/png" },
  });
  return { id, bytes, attempt };
}

/** Sends an authorized photo's bytes to the bucket, then confirms it: the media record. */
export async function sendAndConfirm(base, token, { id, bytes, attempt }) {
  const put = await fetch(attempt.upload.url, { method: "PUT", headers: attempt.upload.headers, body: bytes });
  assert.equal(put.status, 200, `PUT to the bucket: ${await put.text()}`);
  return ok(base, "POST", `/v1/attempts/${id}/confirm`, {
    token, body: { size: bytes.length, content_type: "image/png" }, headers: { "idempotency-key": id },
  });
}
