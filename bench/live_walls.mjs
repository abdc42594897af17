// The live wall under load: WALLS walls (default 300) listen to one event's
// feed (Server-Sent Events) on one server, the host approves APPROVALS
// photos one a second, and the script reports how long each approval took
// to reach every wall, and the server's resident memory and CPU time
// (/proc/<pid>/status and /proc/<pid>/stat) idle, with the walls
// connected, and while they are fed.
//
//   node bench/live_walls.mjs [--walls 300] [--approvals 20]
//
// Environment: UPLOAD_ONCE_SERVER_BIN (default target/server/upload-once-server,
// `cargo build --profile server -p upload-once-server`). Everything runs on
// loopback and stops by itself.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, cpus } from "node:os";
import { join, dirname } from "node:path";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { spawnOnFreePort } from "../tests/e2e/harness.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SERVER_BIN = process.env.UPLOAD_ONCE_SERVER_BIN ?? join(ROOT, "target/server/upload-once-server");
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const WALLS = opt("--walls", 300);
const APPROVALS = opt("--approvals", 20);
// Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux).
const TICK = 100;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Resident memory (bytes) and CPU time (seconds, user + system) of `pid`. */
function usage(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const cpu = (Number(fields[11]) + Number(fields[12])) / TICK;
  return { rss, cpu, at: performance.now() };
}

const dataDir = mkdtempSync(join(tmpdir(), "live-walls-"));
const admin = `bench-${randomUUID()}`;
const { child, port } = await spawnOnFreePort(
  "the server",
  (p) => {
    const c = spawn(SERVER_BIN, ["--listen", `127.0.0.1:${p}`, "--data-dir", dataDir, "--admin-token", admin, "--www-dir", "none"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, RUST_LOG: "warn" },
    });
    c.log = "";
    c.stdout.on("data", (d) => { c.log += d; });
    c.stderr.on("data", (d) => { c.log += d; });
    return c;
  },
  (out, p) => out.includes(`listening on 127.0.0.1:${p} `),
);
const base = `http://127.0.0.1:${port}`;
const stop = () => { child.kill("SIGTERM"); rmSync(dataDir, { recursive: true, force: true }); };
const deadline = setTimeout(() => { console.error("the benchmark took more than 5 minutes: stopped"); stop(); process.exit(1); }, 300_000);

async function call(method, path, token, body, extra = {}) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra },
    body: body && JSON.stringify(body),
  });
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

try {
  const ev = await call("POST", "/v1/events", admin, {
    slug: "bench-wall", title: "Live walls", max_file_bytes: 1_000_000, allowed_types: ["image/*"], moderation: "required",
    // Every photo below has the same bytes: without this they would be one
    // media (the event's default dedup scope) and every wall would get one
    // item, not APPROVALS.
    dedup: "none",
  });
  const { session_token: session } = await call("POST", "/v1/events/bench-wall/sessions", null, { guest_code: ev.guest_code });
  // A 1×1 PNG: the feed, not the renditions, is measured.
  const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f6ad3b0000000049454e44ae426082", "hex");
  const media = [];
  for (let i = 0; i < APPROVALS; i++) {
    const id = randomUUID();
    const a = await call("POST", "/v1/events/bench-wall/attempts", session, { id, filename: `p${i}.png`, size: png.length, content_type: "image/png" });
    await fetch(a.upload.url, { method: "PUT", headers: a.upload.headers, body: png });
    media.push(await call("POST", `/v1/attempts/${id}/confirm`, session, { size: png.length, content_type: "image/png" }, { "idempotency-key": id }));
  }
  if (new Set(media.map((m) => m.id)).size !== APPROVALS) throw new Error("the photos were not distinct media");
  await sleep(2_000);
  const idle = usage(child.pid);

  // The walls: each reads its stream and notes when each media id arrives.
  const arrivals = new Map(media.map((m) => [m.id, []]));
  const controllers = [];
  let connected = 0;
  await Promise.all(Array.from({ length: WALLS }, async () => {
    const controller = new AbortController();
    controllers.push(controller);
    const r = await fetch(`${base}/v1/events/bench-wall/wall/live?code=${ev.guest_code}`, { signal: controller.signal, headers: { accept: "text/event-stream" } });
    if (r.status !== 200) throw new Error(`a wall got ${r.status}`);
    connected += 1;
    (async () => {
      const decoder = new TextDecoder();
      let buffer = "";
      try {
        for await (const chunk of r.body) {
          buffer += decoder.decode(chunk, { stream: true });
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("");
            if (!block.includes("event: items") && !block.includes("event:items")) continue;
            const now = performance.now();
            for (const item of JSON.parse(data).items) arrivals.get(item.id)?.push(now);
          }
        }
      } catch {
        // aborted at the end
      }
    })();
  }));
  // Every wall is listening (the server's own gauge).
  for (let i = 0; i < 100; i++) {
    const m = await (await fetch(`${base}/metrics`)).text();
    if (Number(/upload_once_live_walls (\d+)/.exec(m)?.[1]) === WALLS) break;
    await sleep(100);
  }
  const connectedAt = usage(child.pid);
  await sleep(10_000);
  const quiet = usage(child.pid);

  const approvedAt = new Map();
  for (const m of media) {
    approvedAt.set(m.id, performance.now());
    await call("POST", `/v1/media/${m.id}/moderation`, ev.host_token, { decision: "approve" });
    await sleep(1_000);
  }
  await sleep(2_000);
  const fed = usage(child.pid);

  const latencies = [];
  let missing = 0;
  for (const [id, times] of arrivals) {
    missing += WALLS - times.length;
    for (const t of times) latencies.push(t - approvedAt.get(id));
  }
  const mib = (b) => (b / (1 << 20)).toFixed(1);
  const cpuPct = (a, b) => (((b.cpu - a.cpu) / ((b.at - a.at) / 1000)) * 100).toFixed(1);
  const report = {
    walls: WALLS, connected, approvals: APPROVALS, deliveries: latencies.length, missing,
    latency_ms: { p50: pct(latencies, 50).toFixed(1), p95: pct(latencies, 95).toFixed(1), p99: pct(latencies, 99).toFixed(1), max: Math.max(...latencies).toFixed(1) },
    rss_mib: { idle: mib(idle.rss), walls_connected: mib(connectedAt.rss), walls_fed: mib(fed.rss) },
    cpu_percent_of_one_core: { walls_connected_quiet_10s: cpuPct(connectedAt, quiet), approving_one_per_second: cpuPct(quiet, fed) },
    machine: `${cpus().length} × ${cpus()[0].model}`,
  };
  console.log(JSON.stringify(report, null, 2));
  console.log(`
| walls | approvals | deliveries | missing | latency p50 / p95 / p99 / max | RSS idle → ${WALLS} walls → fed | CPU, ${WALLS} walls quiet | CPU, 1 approval/s |
| --- | --- | --- | --- | --- | --- | --- | --- |
| ${WALLS} | ${APPROVALS} | ${latencies.length} | ${missing} | ${report.latency_ms.p50} / ${report.latency_ms.p95} / ${report.latency_ms.p99} / ${report.latency_ms.max} ms | ${report.rss_mib.idle} → ${report.rss_mib.walls_connected} → ${report.rss_mib.walls_fed} MiB | ${report.cpu_percent_of_one_core.walls_connected_quiet_10s} % | ${report.cpu_percent_of_one_core.approving_one_per_second} % |`);
  for (const c of controllers) c.abort();
  if (missing > 0) process.exitCode = 1;
} finally {
  clearTimeout(deadline);
  stop();
}
