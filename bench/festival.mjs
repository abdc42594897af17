// A festival's size (issue 48), the server's side: one event seeded through
// the API with N media (half approved by one bulk decision, half waiting),
// then what the host's list, a quiet refresh, a refresh after one decision,
// the counts and the wall's newest items cost at that size, and the
// server's resident memory. Printed as JSON, one object per size.
//
//   node bench/festival.mjs [--sizes 1000,10000,100000] [--guests 100]
//
// Environment: UPLOAD_ONCE_SERVER_BIN (the server, the `fast` profile as
// the other benchmarks), UPLOAD_ONCE_ROOT.
import { readFileSync, readdirSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { startServer, json } from "./stack.mjs";

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const SIZES = opt("--sizes", "1000,10000").split(",").map(Number);
const GUESTS = Number(opt("--guests", "100"));
const CONCURRENCY = 32;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rssMiB = (pid) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return Math.round(Number(line.split(/\s+/)[1]) / 1024);
};
const fds = (pid) => readdirSync(`/proc/${pid}/fd`).length;

async function timed(fn) {
  const t = performance.now();
  const value = await fn();
  return { ms: performance.now() - t, value };
}

/** A GET as the host: time, bytes as sent plain and gzipped, the body. */
async function hostGet(server, ev, path) {
  const { ms, value: text } = await timed(async () => {
    const r = await fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${ev.host_token}` } });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return r.text();
  });
  return { ms, bytes: Buffer.byteLength(text), gzip: gzipSync(text).length, body: JSON.parse(text) };
}

/** Runs `task(i)` for i in 0..n, `CONCURRENCY` at a time. */
async function pool(n, task) {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < n) await task(next++);
  }));
}

async function seed(server, n) {
  const slug = `festival-${n}-${Math.random().toString(36).slice(2, 8)}`;
  const ev = await json(await fetch(`${server.base}/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.admin}`, "content-type": "application/json" },
    body: JSON.stringify({ slug, title: "Festival", max_file_bytes: 1 << 20, allowed_types: ["*/*"], moderation: "required" }),
  }));
  const sessions = [];
  for (let g = 0; g < GUESTS; g++) {
    const s = await json(await fetch(`${server.base}/v1/events/${slug}/sessions`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ guest_code: ev.guest_code }),
    }));
    sessions.push(s.session_token);
  }
  const started = performance.now();
  await pool(n, async (i) => {
    const token = sessions[i % GUESTS];
    const id = crypto.randomUUID();
    const body = Buffer.from(`festival photo ${i} ${id}`);
    const a = await json(await fetch(`${server.base}/v1/events/${slug}/attempts`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ id, filename: `IMG_${i}.bin`, size: body.length, content_type: "application/octet-stream" }),
    }));
    const put = await fetch(a.upload.url, { method: "PUT", headers: a.upload.headers || {}, body });
    if (!put.ok) throw new Error(`PUT ${put.status}`);
    const c = await fetch(`${server.base}/v1/attempts/${id}/confirm`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "idempotency-key": id, "content-type": "application/json" },
      body: JSON.stringify({ size: body.length, content_type: "application/octet-stream" }),
    });
    if (!c.ok) throw new Error(`confirm ${c.status} ${await c.text()}`);
  });
  return { ev, slug, seedSeconds: (performance.now() - started) / 1000 };
}

async function measure(server, n) {
  const { ev, slug, seedSeconds } = await seed(server, n);
  const list = (q) => hostGet(server, ev, `/v1/events/${slug}/media?${q}`);
  // Half approved, by one bulk decision over the oldest half (the host saw
  // them: the change cursor after the first half was uploaded is not kept
  // here, so approve all, then the second half is seeded again below).
  const first = await list("filter=pending&limit=1");
  const bulkStart = performance.now();
  const begun = await json(await fetch(`${server.base}/v1/events/${slug}/moderation/bulk`, {
    method: "POST",
    headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
    body: JSON.stringify({ decision: "approve", upto: first.body.changes }),
  }));
  for (;;) {
    const p = await hostGet(server, ev, `/v1/events/${slug}/moderation/bulk/${begun.id}`);
    if (p.body.state === "done") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const bulkSeconds = (performance.now() - bulkStart) / 1000;
  const out = { media: n, guests: GUESTS, seed_seconds: +seedSeconds.toFixed(1), uploads_per_second: Math.round(n / seedSeconds), bulk_approve_seconds: +bulkSeconds.toFixed(1) };

  // Until the server is quiet: every preview made (each a change the
  // host's list is told of), so the refresh measured below is a quiet one.
  const quietStart = performance.now();
  let cursor = (await list("limit=1")).body.changes;
  for (;;) {
    const r = await list(`since=${cursor}&limit=500`);
    if (r.body.media.length === 0 && !(r.body.gone || []).length) break;
    cursor = r.body.changes;
    if (!r.body.more) await new Promise((res) => setTimeout(res, 200));
  }
  out.renditions_settled_seconds_after_bulk = +((performance.now() - quietStart) / 1000).toFixed(1);
  const reads = { first_page: [], quiet: [], wall_last: [] };
  let page, quiet, wall;
  for (let round = 0; round < 9; round++) {
    page = await list("filter=approved&order=newest&limit=100");
    reads.first_page.push(page.ms);
    quiet = await list(`since=${page.body.changes}`);
    reads.quiet.push(quiet.ms);
    wall = await hostGet(server, ev, `/v1/events/${slug}/wall?last=100`);
    reads.wall_last.push(wall.ms);
  }
  // One decision, then the refresh that tells it.
  const one = page.body.media[0];
  await fetch(`${server.base}/v1/media/${one.id}/moderation`, {
    method: "POST",
    headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
    body: JSON.stringify({ decision: "reject" }),
  });
  const changed = await list(`since=${page.body.changes}`);
  // What reading the whole list costs now (what the page paid every 5 s).
  const whole = await timed(async () => {
    let cursor = null, bytes = 0, pages = 0;
    do {
      const p = await list(`limit=500${cursor ? `&cursor=${cursor}` : ""}`);
      bytes += p.bytes;
      pages++;
      cursor = p.body.next_cursor;
    } while (cursor);
    return { bytes, pages };
  });
  Object.assign(out, {
    first_page_ms: +median(reads.first_page).toFixed(1),
    first_page_bytes: page.bytes,
    first_page_gzip_bytes: page.gzip,
    quiet_refresh_ms: +median(reads.quiet).toFixed(1),
    quiet_refresh_bytes: quiet.bytes,
    refresh_after_one_decision_bytes: changed.bytes,
    refresh_after_one_decision_ms: +changed.ms.toFixed(1),
    counts: changed.body.counts,
    wall_last_100_ms: +median(reads.wall_last).toFixed(1),
    wall_last_100_bytes: wall.bytes,
    whole_list_ms: Math.round(whole.ms),
    whole_list_bytes: whole.value.bytes,
    whole_list_pages: whole.value.pages,
    server_rss_mib: rssMiB(server.pid),
    server_descriptors: fds(server.pid),
  });
  return out;
}

// The caps per client address are for guests on the internet; the seeding
// here is one address standing for thousands of phones.
for (const name of ["SESSIONS", "AUTHORIZE", "CONFIRM", "STATUS", "WALL"]) process.env[`UPLOAD_ONCE_RATE_${name}`] = "10000000/min";
const server = await startServer();
try {
  for (const n of SIZES) console.log(JSON.stringify(await measure(server, n)));
} finally {
  await server.stop();
}
