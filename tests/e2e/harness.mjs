// Shared pieces of the end-to-end tests: a real reference server per test
// file, events made through its admin API, generated photos, a static server
// for the Vite example, and a headless Chromium driven by playwright-core.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, existsSync } from "node:fs";
import { deflateSync } from "node:zlib";
import { createServer as netServer } from "node:net";
import { join, extname, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

export const ROOT = process.env.UPLOAD_ONCE_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), "../..");
export const SERVER_BIN = process.env.UPLOAD_ONCE_SERVER_BIN ?? join(ROOT, "target/debug/upload-once-server");
export const CHROMIUM = process.env.UPLOAD_ONCE_CHROMIUM ?? "/usr/bin/chromium";


/** Chromium flags that work on a closed network, as root, headless. */
export const CHROMIUM_ARGS = [
  "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
  "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
];

/** The cargo target directory (test data, screenshots, builds of the tests). */
export const TARGET = process.env.UPLOAD_ONCE_TARGET_DIR ?? join(ROOT, "target");
export const SCREENSHOTS = process.env.UPLOAD_ONCE_SCREENSHOTS ?? join(TARGET, "e2e-screenshots");

/**
 * Listens on a loopback port the system picks, in this process: nothing can
 * take the port between choosing it and listening. Resolves to the port.
 */
export function listenOnFreePort(server) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve(server.address().port);
    });
  });
}

/**
 * A loopback port nobody listens on right now, for a child process that must
 * be told its port before it starts. Another process can take it before the
 * child listens: start such children with `spawnOnFreePort`, which notices
 * and tries another port.
 */
export async function freePort() {
  const srv = netServer();
  const port = await listenOnFreePort(srv);
  await new Promise((r) => srv.close(r));
  return port;
}

/** What a child that could not listen because its port was taken says. */
const ADDRESS_IN_USE = /address already in use|EADDRINUSE|os error 98|Unable to listen/i;

/**
 * Waits until `listening()` (it is given the child's output so far) is true,
 * or the child ends. Resolves `true` once it listens, `false` if it ended
 * because its port was taken; rejects if it ended for another reason or
 * after `ms`. The child's stdout and stderr must be pipes.
 */
export function untilListening(child, what, listening, ms = 30_000) {
  return new Promise((resolve, reject) => {
    let out = "";
    const poll = setInterval(() => check(), 50);
    const timer = setTimeout(() => finish(() => reject(new Error(`${what} did not listen within ${ms} ms:\n${out}`))), ms);
    const finish = (f) => {
      clearInterval(poll);
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.stderr?.off("data", onData);
      child.off("close", onClose);
      f();
    };
    const check = () => { if (listening(out)) finish(() => resolve(true)); };
    const onData = (d) => { out += d; check(); };
    const onClose = (code, signal) => finish(() => {
      if (ADDRESS_IN_USE.test(out)) resolve(false);
      else reject(new Error(`${what} exited (${code ?? signal}) before it listened:\n${out}`));
    });
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("close", onClose);
    check();
  });
}

/**
 * Starts a child that must be told its port: `spawnAt(port)` starts it,
 * `listening(output, port)` says from its output that it listens. When
 * another process took the port first, the child ends saying so, and
 * another port is tried. Resolves to `{child, port}`.
 */
export async function spawnOnFreePort(what, spawnAt, listening, tries = 5) {
  for (let i = 1; ; i++) {
    const port = await freePort();
    const child = spawnAt(port);
    if (await untilListening(child, what, (out) => listening(out, port, child))) return { child, port };
    if (i >= tries) throw new Error(`${what}: each of ${tries} free ports was taken before it could listen`);
  }
}

/**
 * Whether process `pid` itself holds a socket listening on loopback `port`
 * (read from /proc): for children that do not say when they listen.
 */
export function listensOn(pid, port) {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const inodes = new Set();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try { text = readFileSync(table, "utf8"); } catch { continue; }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address, state 0A = LISTEN, inode
      if (f.length > 9 && f[1].endsWith(hex) && f[3] === "0A") inodes.add(f[9]);
    }
  }
  if (inodes.size === 0) return false;
  let fds = [];
  try { fds = readdirSync(`/proc/${pid}/fd`); } catch { return false; }
  return fds.some((fd) => {
    try { return inodes.has(/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]); } catch { return false; }
  });
}

/** Polls `fn` until it returns a truthy value, or throws after `ms`. */
export async function until(what, fn, ms = 20_000, every = 100) {
  const started = Date.now();
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() - started > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}

/**
 * Waits until the rendition job of every media of `ev` has ended, as the
 * host's list at `base` says (`preview`): the wall shows an approved media
 * once its renditions are settled, so an approval then puts it on the wall
 * at once.
 */
export async function renditionsSettled(base, ev, ms = 30_000) {
  await until("every rendition job of the event to end", async () => {
    const response = await fetch(`${base}/v1/events/${ev.event.slug}/media`, { headers: { authorization: `Bearer ${ev.host_token}` } });
    const { media } = await response.json();
    return media.every((m) => m.preview === "ready" || m.preview === "placeholder");
  }, ms);
}

/**
 * Starts the reference server with a fresh data directory, serving the
 * guest/host/wall pages (or those of `wwwDir`) and the built package (or `pkgDir`). Resolves once
 * it listens (it says so) and /healthz is 200. `extraArgs`: more flags, or a
 * function of the port that makes them (for flags that name the server's
 * own origin).
 */
export async function startServer(name, extraArgs = [], { pkgDir = join(ROOT, "pkg"), wwwDir = join(ROOT, "www") } = {}) {
  mkdirSync(join(TARGET, "test-data"), { recursive: true });
  const dataDir = mkdtempSync(join(TARGET, "test-data", `e2e-${name}-`));
  const admin = `e2e-admin-${Math.random().toString(36).slice(2)}`;
  const start = (port) => {
    const args = [
      "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir, "--admin-token", admin,
      "--www-dir", wwwDir, "--pkg-dir", pkgDir, ...(typeof extraArgs === "function" ? extraArgs(port) : extraArgs),
    ];
    const child = spawn(SERVER_BIN, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, RUST_LOG: "warn" } });
    child.log = "";
    child.stdout.on("data", (d) => { child.log += d; });
    child.stderr.on("data", (d) => { child.log += d; });
    return child;
  };
  // The server prints the address it bound: this child has the port.
  const listening = (out, port) => out.includes(`listening on 127.0.0.1:${port} `);
  const what = `the server (${name})`;
  const { child, port } = await spawnOnFreePort(what, start, listening);
  const server = { base: `http://127.0.0.1:${port}`, port, admin, dataDir, child };
  server.waitHealthy = () => until("the server to answer", async () => {
    try { return (await fetch(`${server.base}/healthz`)).ok; } catch { return false; }
  }, 30_000, 50);
  /**
   * Kills the server (SIGKILL), then starts it again on the same data and,
   * if it is still free, the same port. `movable`: when another process took
   * the port meanwhile, a new one is used (`server.base` changes; for a
   * server behind a proxy); otherwise that is an error.
   */
  server.restart = async (signal = "SIGKILL", { movable = false } = {}) => {
    server.child.kill(signal);
    await new Promise((r) => server.child.once("exit", r));
    server.child = start(server.port);
    if (!(await untilListening(server.child, what, (out) => listening(out, server.port)))) {
      if (!movable) throw new Error(`${what}: another process took port ${server.port} while the server was down`);
      const moved = await spawnOnFreePort(what, start, listening);
      Object.assign(server, { child: moved.child, port: moved.port, base: `http://127.0.0.1:${moved.port}` });
    }
    await server.waitHealthy();
  };
  /** Kills the server (SIGKILL) and leaves it down: nothing answers on its port until `up`. */
  server.down = async () => {
    server.child.kill("SIGKILL");
    await new Promise((r) => server.child.once("exit", r));
  };
  /** Starts the server again after `down`, on the same data and port. */
  server.up = async () => {
    server.child = start(server.port);
    if (!(await untilListening(server.child, what, (out) => listening(out, server.port)))) {
      throw new Error(`${what}: another process took port ${server.port} while the server was down`);
    }
    await server.waitHealthy();
  };
  server.stop = async () => {
    if (server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await new Promise((r) => server.child.once("exit", r));
    }
  };
  await server.waitHealthy();
  return server;
}

/** Creates an event; resolves to `{event, guest_code, host_token, wall_token}`. */
export async function createEvent(server, { slug, maxFileBytes = 50_000_000, moderation = "required", types = ["image/*", "video/*"] } = {}) {
  slug ??= `e2e-${Math.random().toString(36).slice(2, 10)}`;
  const res = await fetch(`${server.base}/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.admin}`, "content-type": "application/json" },
    body: JSON.stringify({ slug, title: `E2E ${slug}`, max_file_bytes: maxFileBytes, allowed_types: types, moderation }),
  });
  if (res.status !== 201) throw new Error(`create event: ${res.status} ${await res.text()}`);
  return res.json();
}

/** The event's media records, as its host sees them. */
export async function hostMedia(server, ev, moderation) {
  const q = moderation ? `?moderation=${moderation}` : "";
  const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/media${q}`, {
    headers: { authorization: `Bearer ${ev.host_token}` },
  });
  if (!res.ok) throw new Error(`media list: ${res.status}`);
  return (await res.json()).media;
}

/** A guest's upload through the API, without a page: session, authorize,
 * PUT, confirm; the confirmed media record. */
export async function uploadThroughApi(server, ev, name, type, bytes) {
  const json = { "content-type": "application/json" };
  const session = await (await fetch(`${server.base}/v1/events/${ev.event.slug}/sessions`, {
    method: "POST", headers: json, body: JSON.stringify({ guest_code: ev.guest_code }),
  })).json();
  const auth = { ...json, authorization: `Bearer ${session.session_token}` };
  const id = randomUUID();
  const attempt = await (await fetch(`${server.base}/v1/events/${ev.event.slug}/attempts`, {
    method: "POST", headers: auth, body: JSON.stringify({ id, filename: name, size: bytes.length, content_type: type }),
  })).json();
  const put = await fetch(attempt.upload.url, { method: "PUT", headers: attempt.upload.headers, body: bytes });
  if (put.status !== 200) throw new Error(`PUT of ${name}: ${put.status}`);
  const confirmed = await fetch(`${server.base}/v1/attempts/${id}/confirm`, {
    method: "POST", headers: { ...auth, "idempotency-key": id }, body: JSON.stringify({ size: bytes.length, content_type: type }),
  });
  if (confirmed.status !== 200) throw new Error(`confirm of ${name}: ${confirmed.status}`);
  return confirmed.json();
}

export function guestUrl(server, ev) {
  return `${server.base}/?event=${ev.event.slug}&code=${ev.guest_code}`;
}
/**
 * The host link: the token in the fragment (never sent to the server).
 * `query`: more of the query, e.g. `&code=…` (it must come before the `#`).
 */
export function hostUrl(server, ev, query = "") {
  return `${server.base}/host.html?event=${ev.event.slug}${query}#token=${encodeURIComponent(ev.host_token)}`;
}
export function wallUrl(server, ev) {
  return `${server.base}/wall.html?event=${ev.event.slug}&code=${ev.guest_code}`;
}

// --- photos -------------------------------------------------------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/**
 * A real PNG of `width`x`height` in a colour picked from `seed`, padded
 * with noise so it weighs about `bytes` (incompressible rows).
 */
export function photo(seed, bytes = 200_000, width = 320, height = 240) {
  let state = seed * 2654435761 >>> 0;
  const rand = () => { state ^= state << 13; state ^= state >>> 17; state ^= state << 5; return (state >>> 0) & 0xff; };
  const rows = Math.max(height, Math.ceil(bytes / (width * 3 + 1)));
  const raw = Buffer.alloc(rows * (width * 3 + 1));
  const [r0, g0, b0] = [rand(), rand(), rand()];
  for (let y = 0; y < rows; y++) {
    const o = y * (width * 3 + 1);
    raw[o] = 0;
    for (let x = 0; x < width; x++) {
      const p = o + 1 + x * 3;
      const noise = y >= height * 0.8 ? rand() : 0;
      raw[p] = (r0 + x) & 0xff; raw[p + 1] = (g0 + y) & 0xff; raw[p + 2] = (b0 ^ noise) & 0xff;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(rows, 4);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw, { level: 0 })), chunk("IEND", Buffer.alloc(0)),
  ]);
}

/**
 * A tiny real PNG (4x4) that no other `n` below 16,777,216 shares (its
 * first pixel is `n`): thousands of distinct photos, fast to send and to
 * make renditions of.
 */
export function tinyPhoto(n) {
  const width = 4;
  const height = 4;
  const raw = Buffer.alloc(height * (width * 3 + 1));
  for (let y = 0; y < height; y++) {
    const o = y * (width * 3 + 1);
    for (let x = 0; x < width; x++) {
      const p = o + 1 + x * 3;
      raw[p] = x * 60 + y; raw[p + 1] = y * 60 + x; raw[p + 2] = 128;
    }
  }
  raw[1] = (n >>> 16) & 0xff; raw[2] = (n >>> 8) & 0xff; raw[3] = n & 0xff;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0)),
  ]);
}

/**
 * Seeds `ev` with `n` distinct tiny photos through the API, the way guests'
 * pages send them (authorize, PUT, confirm), `concurrency` at a time, a
 * guest session per `perSession` photos (`first`: the number of the first
 * photo, for more of them later). Resolves to the media ids, in the order
 * the photos were numbered.
 */
export async function seedPhotos(server, ev, n, { concurrency = 16, perSession = 500, first = 0, prefix = "seed" } = {}) {
  const json = { "content-type": "application/json" };
  const sessions = [];
  for (let s = 0; s < Math.ceil(n / perSession); s++) {
    const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/sessions`, { method: "POST", headers: json, body: JSON.stringify({ guest_code: ev.guest_code }) });
    if (res.status !== 201) throw new Error(`session: ${res.status} ${await res.text()}`);
    sessions.push((await res.json()).session_token);
  }
  const ids = new Array(n);
  let next = 0;
  const one = async (i) => {
    const auth = { ...json, authorization: `Bearer ${sessions[Math.floor(i / perSession)]}` };
    const bytes = tinyPhoto(first + i);
    const id = randomUUID();
    const name = `${prefix}-${String(first + i).padStart(6, "0")}.png`;
    const authorized = await fetch(`${server.base}/v1/events/${ev.event.slug}/attempts`, {
      method: "POST", headers: auth, body: JSON.stringify({ id, filename: name, size: bytes.length, content_type: "image/png" }),
    });
    if (!authorized.ok) throw new Error(`authorize of ${name}: ${authorized.status} ${await authorized.text()}`);
    const attempt = await authorized.json();
    const put = await fetch(attempt.upload.url, { method: "PUT", headers: attempt.upload.headers, body: bytes });
    if (put.status !== 200) throw new Error(`PUT of ${name}: ${put.status}`);
    const confirmed = await fetch(`${server.base}/v1/attempts/${id}/confirm`, {
      method: "POST", headers: { ...auth, "idempotency-key": id }, body: JSON.stringify({ size: bytes.length, content_type: "image/png" }),
    });
    if (confirmed.status !== 200) throw new Error(`confirm of ${name}: ${confirmed.status} ${await confirmed.text()}`);
    ids[i] = (await confirmed.json()).id;
  };
  const worker = async () => {
    while (next < n) await one(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return ids;
}

/**
 * Every media record of `ev` its host's list holds, read a page at a time
 * (`filter`: pending, approved, rejected or all).
 */
export async function hostMediaAll(server, ev, filter = "all") {
  const all = [];
  let cursor = null;
  for (;;) {
    const q = new URLSearchParams({ filter, limit: "500" });
    if (cursor) q.set("cursor", cursor);
    const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/media?${q}`, { headers: { authorization: `Bearer ${ev.host_token}` } });
    if (!res.ok) throw new Error(`media list: ${res.status} ${await res.text()}`);
    const body = await res.json();
    all.push(...body.media);
    if (!body.next_cursor) return all;
    cursor = body.next_cursor;
  }
}

/** `setInputFiles` payloads for n photos. */
export function photos(n, bytes = 200_000, prefix = "photo") {
  // Another prefix, other pictures: the server keeps one media per content
  // within an event, so two guests' photos must differ to be two photos.
  const base = prefix === "photo" ? 0 : ([...prefix].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7) % 100_000) * 1000;
  return Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${i + 1}.png`, mimeType: "image/png", buffer: photo(base + i + 1, bytes) }));
}

// --- static server for the Vite example -----------------------------------

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".wasm": "application/wasm", ".json": "application/json", ".svg": "image/svg+xml" };

/** Serves a directory on a port the system picks. */
export async function serveStatic(dir) {
  const srv = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    let file = join(dir, path === "/" ? "index.html" : path);
    if (!file.startsWith(dir) || !existsSync(file)) file = join(dir, "index.html");
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  const port = await listenOnFreePort(srv);
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((r) => srv.close(r)) };
}

/** Makes the screenshot directory. */
export function screenshotPath(name) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return join(SCREENSHOTS, name);
}
