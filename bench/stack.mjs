// What the benchmark scripts share: the reference server on a fresh data
// dir, an event, random files on disk, and the Uppy bundle the first-load and
// phone-uplink pages load (bench/run.mjs, bench/phone_uplink.mjs).
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, rmSync, openSync, writeSync, closeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnOnFreePort } from "../tests/e2e/harness.mjs";

export const ROOT = process.env.UPLOAD_ONCE_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), "..");
export const SERVER_BIN = process.env.UPLOAD_ONCE_SERVER_BIN ?? join(ROOT, "target/server/upload-once-server");
export const CHROMIUM = process.env.UPLOAD_ONCE_CHROMIUM ?? "/usr/bin/chromium";
export const MiB = 1 << 20;

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Starts a reference server on a fresh data dir, serving `www` (the bench
 * pages by default) and pkg/. `extra`: more command-line arguments.
 */
export async function startServer({ extra = [], www = join(ROOT, "bench/www") } = {}) {
  const dataDir = join(ROOT, "target/bench-data", `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}`);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const admin = `bench-${Math.random().toString(36).slice(2)}`;
  // The server binds the port it is told, and says so; another port is
  // tried if another process took that one first.
  const { child, port } = await spawnOnFreePort("the bench server", (port) => spawn(SERVER_BIN, [
    "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir, "--admin-token", admin,
    "--www-dir", www, "--pkg-dir", join(ROOT, "pkg"), ...extra,
  ], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, RUST_LOG: "warn" } }), (out, port) => out.includes(`listening on 127.0.0.1:${port} `));
  child.stdout.resume();
  child.stderr.pipe(process.stderr);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`${base}/healthz`)).ok) break; } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  // The benchmark's objects take gigabytes: gone with the server.
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { base, admin, stop, pid: child.pid };
}

/** Writes `bytes` of random bytes to `path`, 8 MiB at a time. */
export function writeRandomFile(path, bytes) {
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, "w");
  try {
    for (let n = 0; n < bytes; n += 8 * MiB) writeSync(fd, randomBytes(Math.min(8 * MiB, bytes - n)));
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a file of `mib` MiB to `path`, each MiB filled differently and
 * marked with its index and `seed` (so files of two seeds are never one media).
 */
export function writeSeededFile(path, mib, seed) {
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(MiB);
  for (let i = 0; i < mib; i++) {
    chunk.fill((seed * 31 + i) % 251);
    chunk.writeUInt32BE(i, 0);
    chunk.writeUInt32BE(seed, 4);
    writeSync(fd, chunk);
  }
  closeSync(fd);
}

export async function json(res) {
  if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
  return res.json();
}

export async function createEvent(server) {
  const slug = `bench-${Math.random().toString(36).slice(2, 10)}`;
  return json(await fetch(`${server.base}/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.admin}`, "content-type": "application/json" },
    body: JSON.stringify({ slug, title: "Benchmarks", max_file_bytes: 4 * 1024 * MiB, allowed_types: ["*/*"], moderation: "none" }),
  }));
}

/**
 * Opens the bench page (bench/www/index.html) of `server` in a new page of
 * `browser`, its errors logged, and creates an event there; `ctx` is what the
 * page's `transferUploadOnce` and `memoryDuringUpload` take to join it.
 */
export async function openBenchPage(browser, server) {
  const page = await browser.newPage();
  page.on("pageerror", (e) => console.error("page error:", e));
  await page.goto(`${server.base}/index.html`);
  await page.waitForSelector("body[data-ready='1']");
  const ev = await createEvent(server);
  return { page, ev, ctx: { event: ev.event.slug, code: ev.guest_code } };
}

export const CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"];

/**
 * Bundles the Uppy peer (bench/peers/uppy.js) into bench/www/uppy.bundle.js
 * for the first-load page (bench/www/uppy.html), as its size is measured
 * (esbuild --bundle --minify), and writes brotli/gzip copies beside the bench
 * pages, as `cargo xtask` does for www/ and pkg/: the server sends them as they are.
 */
export function buildUppyPage() {
  execFileSync(join(ROOT, "bench/node_modules/.bin/esbuild"), [join(ROOT, "bench/peers/uppy.js"), "--bundle", "--minify", "--format=esm",
    `--outfile=${join(ROOT, "bench/www/uppy.bundle.js")}`, "--log-level=error"]);
  execFileSync("node", [join(ROOT, "xtask/minify/precompress.mjs"), join(ROOT, "bench/www")], { stdio: ["ignore", "ignore", "inherit"] });
}

/** A promise that rejects with the page's first uncaught error (raced against each step, so an error fails the run at once). */
export function pageFailure(page) {
  let failed;
  const failure = new Promise((_, reject) => { failed = reject; });
  failure.catch(() => {});
  page.on("pageerror", (e) => failed(e));
  return failure;
}
