// The cluster layer's stack, as docs/deploy.md §3 deploys the server: two
// instances of the release build on one PostgreSQL database and one S3
// bucket (moto's server: an S3 nobody here wrote), sharing the signing key
// and the admin token, behind nginx with the site file of docs/deploy.md.
// Optionally the fault proxy (testing/fault-proxy) in front of nginx, so
// answers can be dropped on purpose.
//
// `cargo xtask test cluster` starts PostgreSQL and moto, builds the release
// server, and passes them in the environment:
//   UPLOAD_ONCE_SERVER_BIN, UPLOAD_ONCE_CLUSTER_PG_ADMIN_URL,
//   UPLOAD_ONCE_CLUSTER_S3_ENDPOINT, UPLOAD_ONCE_NGINX, UPLOAD_ONCE_FAULT_PROXY_BIN
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ROOT, TARGET, SERVER_BIN, freePort, listensOn, until, untilListening } from "../e2e/harness.mjs";
import { PROXY_BIN } from "../faults/stack.mjs";

// Every process the cluster starts is stopped when this one ends, also on
// Ctrl-C or an uncaught error (nginx and the proxies would outlive it).
const children = new Set();
function track(child, signal = "SIGKILL") {
  child.stopWith = signal;
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}
process.once("exit", () => { for (const c of children) c.kill(c.stopWith); });
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => process.exit(130));

const PG_ADMIN_URL = process.env.UPLOAD_ONCE_CLUSTER_PG_ADMIN_URL;
const S3_ENDPOINT = process.env.UPLOAD_ONCE_CLUSTER_S3_ENDPOINT;
const NGINX = process.env.UPLOAD_ONCE_NGINX ?? "/usr/sbin/nginx";

/**
 * The nginx site file of docs/deploy.md (its only `nginx` block), with its
 * `listen` port and its upstream's `server` lines replaced, and nothing else:
 * the test fails if the replacement changed any other line.
 */
export function siteConfig(listenPort, upstreams) {
  const doc = readFileSync(join(ROOT, "docs/deploy.md"), "utf8");
  const blocks = [...doc.matchAll(/```nginx\n([\s\S]*?)```/g)].map((m) => m[1]);
  if (blocks.length !== 1) throw new Error(`docs/deploy.md must hold exactly one nginx block, not ${blocks.length}`);
  const original = blocks[0].split("\n");
  let upstreamIndex = 0;
  let listens = 0;
  const lines = original.map((line) => {
    const server = /^(\s+server )(\S+:\d+)(.*;)$/.exec(line);
    if (server) {
      const to = upstreams[upstreamIndex++];
      return to === undefined ? line : `${server[1]}${to}${server[3]}`;
    }
    if (/^\s+listen \d+;$/.test(line)) {
      listens++;
      return line.replace(/\d+;$/, `127.0.0.1:${listenPort};`);
    }
    return line;
  });
  if (upstreamIndex !== upstreams.length || listens !== 1) {
    throw new Error(`the nginx block has ${upstreamIndex} upstream servers and ${listens} listen lines; the test replaces ${upstreams.length} and 1`);
  }
  const changed = lines.filter((l, i) => l !== original[i]).length;
  if (changed !== upstreams.length + 1) throw new Error(`replacing the addresses changed ${changed} lines`);
  return lines.join("\n");
}

/** A fault proxy (testing/fault-proxy) on a port of its own; its upstream is set later. */
async function startFaultProxy() {
  const child = track(spawn(PROXY_BIN, ["--listen", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] }));
  child.log = "";
  child.stderr.on("data", (d) => { child.log += d; });
  let port;
  const listened = await untilListening(child, "the fault proxy", (out) => {
    port = /fault-proxy: listening on 127\.0\.0\.1:(\d+)/.exec(out)?.[1];
    return port !== undefined;
  });
  if (!listened) throw new Error(`the fault proxy could not listen:\n${child.log}`);
  const base = `http://127.0.0.1:${port}`;
  const call = async (method, path, body) => {
    const res = await fetch(`${base}/__faults/${path}`, {
      method, headers: { "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`proxy ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    child, base,
    rules: (...rules) => call("POST", "rules", { rules }),
    clearRules: () => call("DELETE", "rules"),
    reset: () => call("POST", "reset"),
    upstream: (url) => call("POST", "upstream", { upstream: url }),
    seed: (seed) => call("POST", "seed", { seed }),
    log: () => call("GET", "log"),
    inFlight: async () => Object.values((await call("GET", "log")).in_flight),
  };
}

/** nginx with the site file, on a free loopback port, all its files in `dir`. */
async function startNginx(dir, upstreams) {
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const site = join(dir, "upload-once.conf");
    writeFileSync(site, siteConfig(port, upstreams));
    // What Debian's /etc/nginx/nginx.conf gives the site file, with the
    // paths in `dir` (nginx runs as root here, in the foreground).
    writeFileSync(join(dir, "nginx.conf"), [
      "daemon off;", "worker_processes 1;", `pid ${join(dir, "nginx.pid")};`, `error_log ${join(dir, "error.log")} warn;`,
      "events { worker_connections 1024; }",
      "http {",
      `  access_log ${join(dir, "access.log")};`,
      ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${join(dir, t)};`),
      `  include ${site};`,
      "}",
    ].join("\n"));
    // SIGTERM: the master stops its workers (killed, it would leave them).
    const child = track(spawn(NGINX, ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: ["ignore", "pipe", "pipe"] }), "SIGTERM");
    child.log = "";
    child.stdout.on("data", (d) => { child.log += d; });
    child.stderr.on("data", (d) => { child.log += d; });
    const up = await until("nginx to listen", () => child.exitCode !== null || listensOn(child.pid, port), 10_000, 50).catch(() => false);
    if (up && child.exitCode === null) return { child, port, base: `http://127.0.0.1:${port}` };
    child.kill("SIGKILL");
    let errors = child.log;
    try { errors += readFileSync(join(dir, "error.log"), "utf8"); } catch {}
    if (!/Address already in use/.test(errors) || tries >= 5) throw new Error(`nginx did not start:\n${errors}`);
  }
}

function psql(sql, url = PG_ADMIN_URL) {
  const r = spawnSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`psql ${sql}: ${r.stderr}`);
  return r.stdout.trim();
}

/** A fresh bucket in moto, which browsers from any origin may PUT to. */
async function createBucket(name) {
  // moto checks no signature: these requests are unsigned.
  const made = await fetch(`${S3_ENDPOINT}/${name}`, { method: "PUT" });
  if (!made.ok) throw new Error(`create bucket ${name}: ${made.status} ${await made.text()}`);
  const cors = `<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod><AllowedMethod>HEAD</AllowedMethod><AllowedHeader>*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>3600</MaxAgeSeconds></CORSRule></CORSConfiguration>`;
  const set = await fetch(`${S3_ENDPOINT}/${name}?cors`, { method: "PUT", body: cors, headers: { "content-type": "application/xml" } });
  if (!set.ok) throw new Error(`bucket CORS: ${set.status} ${await set.text()}`);
}

const xmlValues = (xml, tag) => [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, "g"))].map((m) => m[1]);

/** Every object in the bucket: key → size (ListObjectsV2, every page). */
export async function bucketObjects(bucket) {
  const objects = new Map();
  let token = null;
  do {
    const q = new URLSearchParams({ "list-type": "2", ...(token ? { "continuation-token": token } : {}) });
    const res = await fetch(`${S3_ENDPOINT}/${bucket}?${q}`);
    const xml = await res.text();
    if (!res.ok) throw new Error(`list ${bucket}: ${res.status} ${xml}`);
    for (const c of xml.split("<Contents>").slice(1)) objects.set(xmlValues(c, "Key")[0], Number(xmlValues(c, "Size")[0]));
    token = /<IsTruncated>true<\/IsTruncated>/.test(xml) ? xmlValues(xml, "NextContinuationToken")[0] : null;
  } while (token);
  return objects;
}

/** The multipart uploads still open in the bucket (their keys). */
export async function openUploads(bucket) {
  const res = await fetch(`${S3_ENDPOINT}/${bucket}?uploads`);
  const xml = await res.text();
  if (!res.ok) throw new Error(`list uploads of ${bucket}: ${res.status} ${xml}`);
  return xml.split("<Upload>").slice(1).map((u) => xmlValues(u, "Key")[0]);
}

/**
 * Starts the cluster `name`: a fresh database and bucket, two instances,
 * nginx, and (with `faults`) the fault proxy in front of nginx. The pages'
 * and links' public address is the outermost one.
 */
export async function startCluster(name, { serverArgs = [], faults = false } = {}) {
  if (!PG_ADMIN_URL || !S3_ENDPOINT) throw new Error("run through `cargo xtask test cluster` (it starts PostgreSQL and moto)");
  mkdirSync(join(TARGET, "test-data"), { recursive: true });
  const dir = mkdtempSync(join(TARGET, "test-data", `cluster-${name}-`));
  // nginx's workers (`nobody`) use its temporary directories in here.
  chmodSync(dir, 0o755);
  const id = `${name.replace(/[^a-z0-9]/g, "")}${randomBytes(4).toString("hex")}`;
  const database = `cluster_${id}`;
  psql(`CREATE DATABASE ${database}`);
  const databaseUrl = PG_ADMIN_URL.replace(/\/[^/]*$/, `/${database}`);
  const bucket = `cluster-${id}`;
  await createBucket(bucket);
  const admin = `cluster-admin-${randomBytes(8).toString("hex")}`;
  const signingKey = randomBytes(32).toString("hex");

  // With faults: one fault proxy in front of nginx (the browser's way in),
  // and one between the instances and moto (their object store calls can
  // be slowed, and the browser's PUTs go through it too: they are signed
  // for the endpoint the instances know).
  const proxy = faults ? await startFaultProxy() : null;
  const storageProxy = faults ? await startFaultProxy() : null;
  if (storageProxy) await storageProxy.upstream(S3_ENDPOINT);
  const proxyBase = proxy?.base ?? null;
  const s3Endpoint = storageProxy?.base ?? S3_ENDPOINT;

  const ports = [await freePort(), await freePort()];
  const nginx = await startNginx(dir, ports.map((p) => `127.0.0.1:${p}`));
  const publicUrl = proxyBase ?? nginx.base;
  if (proxy) await proxy.upstream(nginx.base);

  const instances = ports.map((port, i) => {
    const label = "AB"[i];
    const dataDir = join(dir, `instance-${label}`);
    mkdirSync(dataDir, { recursive: true });
    const args = [
      "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir, "--admin-token", admin, "--signing-key", signingKey,
      "--public-url", publicUrl, "--trusted-proxy", "127.0.0.1",
      "--database-url", databaseUrl, "--storage", "s3", "--s3-endpoint", s3Endpoint, "--s3-bucket", bucket,
      "--www-dir", join(ROOT, "www"), "--pkg-dir", join(ROOT, "pkg"), ...serverArgs,
    ];
    const instance = {
      label, port, base: `http://127.0.0.1:${port}`, child: null, log: "", starts: 0,
      async start() {
        // This start's own output (a line of the last one would say it listens).
        instance.log = "";
        const child = track(spawn(SERVER_BIN, args, {
          stdio: ["ignore", "pipe", "pipe"],
          env: { ...process.env, RUST_LOG: "warn", AWS_ACCESS_KEY_ID: "cluster", AWS_SECRET_ACCESS_KEY: "cluster" },
        }));
        instance.child = child;
        instance.starts++;
        child.stdout.on("data", (d) => { instance.log += d; });
        child.stderr.on("data", (d) => { instance.log += d; });
        const listening = await untilListening(child, `instance ${label}`, () => instance.log.includes(`listening on 127.0.0.1:${port} `));
        if (!listening) throw new Error(`instance ${label} did not start:\n${instance.log.slice(-3000)}`);
        await until(`instance ${label} to be ready`, async () => {
          try { return (await fetch(`${instance.base}/readyz`)).ok; } catch { return false; }
        }, 30_000, 50);
      },
      /** Stops it with `signal` and waits until it is gone. */
      async stop(signal = "SIGTERM") {
        const child = instance.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once("exit", r));
        child.kill(signal);
        await exited;
      },
      /** Its Prometheus metrics: name{labels} → value (none while it is down). */
      async metrics() {
        const text = await fetch(`${instance.base}/metrics`).then((r) => r.text(), () => "");
        const out = new Map();
        for (const line of text.split("\n")) {
          const m = /^([a-z_]+(?:\{.*\})?) (\S+)$/.exec(line);
          if (m) out.set(m[1], Number(m[2]));
        }
        return out;
      },
    };
    return instance;
  });
  // One after the other: the first creates the schema.
  for (const instance of instances) await instance.start();

  const api = { base: nginx.base, admin };
  return {
    name, dir, bucket, database, nginx, proxy, storageProxy, instances, api,
    /** Where the browser goes: the fault proxy, or nginx. */
    base: publicUrl,
    guestUrl: (ev) => `${publicUrl}/?event=${ev.event.slug}&code=${ev.guest_code}`,
    wallUrl: (ev) => `${publicUrl}/wall.html?event=${ev.event.slug}&code=${ev.guest_code}`,
    /** The bucket's objects (key → size), and the keys of the multipart uploads still open. */
    storage: async () => ({ objects: await bucketObjects(bucket), partsLeft: await openUploads(bucket) }),
    /** Whether every instance is up and ready. */
    ready: async () => (await Promise.all(instances.map((i) => fetch(`${i.base}/readyz`).then((r) => r.ok, () => false)))).every(Boolean),
    /** A query in the cluster's database; its rows as text, one per line. */
    psql: (sql) => psql(sql, databaseUrl),
    /**
     * Tears it all down: nginx first, so its idle upstream connections are
     * gone before the instances stop (an instance keeps a trusted proxy's
     * idle connections open for its `--shutdown-proxy-grace` while nginx
     * lives), then both instances at once.
     */
    async stop() {
      proxy?.child.kill("SIGTERM");
      const child = nginx.child;
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      await Promise.all(instances.map((instance) => instance.stop("SIGTERM").catch(() => {})));
      storageProxy?.child.kill("SIGTERM");
    },
  };
}

/** Requests the instance is at work on now (the scrape is not one). */
async function busy(instance) {
  return (await instance.metrics()).get("upload_once_requests_in_flight") ?? 0;
}

/**
 * The soak's instance losses (tests/faults/soak.mjs `during`): instance A
 * is killed (SIGKILL) while a file is part-way through its parts and a
 * confirm is at work on A, then started again; once A has carried the load
 * for a while, B is stopped gracefully (SIGTERM) while it is at work on
 * requests, and started again. With `rolling`, A is then stopped the same
 * way too, so each instance has had a graceful restart (a rolling restart,
 * B then A). With `afterConfirmed`, all of it starts once that many
 * attempts are confirmed (`confirmed` must then be given). Resolves to
 * what happened.
 */
export function restartEachInstance(cluster, { within = 240_000, rolling = false, afterConfirmed = 0 } = {}) {
  const [a, b] = cluster.instances;
  const isConfirm = (r) => r.method === "POST" && r.path.endsWith("/confirm");
  return async ({ list, confirmed: confirmedSoFar }) => {
    const report = { killed: null, stopped: null };
    const by = Date.now() + within;
    // A long run's losses come once this many attempts are confirmed.
    while (afterConfirmed > 0 && Date.now() < by && (await confirmedSoFar()) < afterConfirmed) await sleep(1_000);
    // Every object store HEAD (each confirm makes one) takes 300 ms more
    // while the moment is sought, so a confirm is at work long enough to be
    // caught.
    await cluster.storageProxy.rules({ method: "HEAD", path: "*", action: { kind: "delay", ms: 300 } });
    // A confirm at work, and A at work, while a file is part-way through its
    // parts. nginx may have sent that confirm to B: then A's kill cut none,
    // and A is killed again at the next such moment (kills counts them).
    let midParts = null;
    let atWork = 0;
    let cut = [];
    let kills = 0;
    while (Date.now() < by && cut.length === 0) {
      midParts = null;
      // The guests' lists are read at most every 250 ms (a page asked every
      // 5 ms would spend its time answering); the proxy and A every 5 ms.
      let listedAt = 0;
      let caught = false;
      while (Date.now() < by) {
        if (Date.now() - listedAt > 250) {
          midParts = (await list()).find((x) => x.partCount > 1 && x.partsDone > 0 && x.partsDone < x.partCount);
          listedAt = Date.now();
        }
        if (midParts && (await cluster.proxy.inFlight()).some(isConfirm) && (atWork = await busy(a)) > 0) {
          caught = true;
          break;
        }
        await sleep(5);
      }
      // Time ran out: nothing of this round's reads is reported.
      if (!caught) midParts = null;
      const killedAt = Date.now();
      await a.stop("SIGKILL");
      kills += 1;
      await a.start();
      // The confirms A was at work on: nginx answered them 502 (it never
      // sends a POST that reached an instance to another one).
      cut = (await cluster.proxy.log()).requests.filter((r) => isConfirm(r) && r.status === 502 && r.at_ms <= killedAt && r.done_ms >= killedAt);
    }
    await cluster.storageProxy.clearRules();
    report.killed = {
      instance: a.label, kills, requestsAtWork: atWork, confirmsCut: cut.length,
      partsOfALargeFile: midParts ? `${midParts.partsDone} of ${midParts.partCount}` : "none part-way (time ran out)",
    };
    // A carries the load for a while (B is up too), then B stops while at work.
    const confirmed = confirmedSoFar ?? (async () => (await list()).filter((x) => x.confirmation === "confirmed").length);
    const before = await confirmed();
    while (Date.now() < by && (await confirmed()) < before + 10) await sleep(200);
    // An instance stopped gracefully while at work, and started again: what
    // it was at work on, it finished (no request answered 502 meanwhile).
    const stopGracefully = async (instance) => {
      let atWorkNow = 0;
      while (Date.now() < by && (atWorkNow = await busy(instance)) === 0) await sleep(5);
      const exited = new Promise((r) => instance.child.once("exit", (code, signal) => r({ code, signal })));
      const stopping = Date.now();
      instance.child.kill("SIGTERM");
      const exit = await exited;
      const stopped = Date.now();
      const cutByTheStop = (await cluster.proxy.log()).requests.filter((r) => r.status === 502 && r.done_ms >= stopping && r.at_ms <= stopped);
      await instance.start();
      return { instance: instance.label, requestsAtWork: atWorkNow, exit, stoppedInMs: stopped - stopping, answered502: cutByTheStop.length };
    };
    report.stopped = await stopGracefully(b);
    if (rolling) {
      const restarted = await confirmed();
      while (Date.now() < by && (await confirmed()) < restarted + 10) await sleep(200);
      report.stoppedToo = await stopGracefully(a);
    }
    return report;
  };
}

/** An instance's resident memory (KiB) and open descriptors now, read from /proc. */
export function resources(instance) {
  const pid = instance.child?.pid;
  try {
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
    return { pid, rssKiB: rss, fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return { pid, rssKiB: NaN, fds: NaN };
  }
}

/**
 * Watches the instances every `every` ms until `stop()`: the rendition jobs
 * each process ended (its last count before it stopped; a process killed
 * within `every` of a job may lose that count, so the total is a floor),
 * and each instance's memory and descriptors when first seen after its
 * last start, at their highest, and at the end.
 */
export function watchInstances(cluster, every = 2_000) {
  const ended = new Map();
  const seen = new Map();
  let running = true;
  const sample = async () => {
    for (const instance of cluster.instances) {
      const m = await instance.metrics();
      if (m.size) {
        const n = (m.get('upload_once_rendition_jobs_total{outcome="done"}') ?? 0) + (m.get('upload_once_rendition_jobs_total{outcome="placeholder"}') ?? 0);
        ended.set(instance.child.pid, n);
      }
      const now = resources(instance);
      const s = seen.get(instance.label);
      if (!s || s.first.pid !== now.pid) seen.set(instance.label, { first: now, peakRssKiB: now.rssKiB, peakFds: now.fds });
      else Object.assign(s, { peakRssKiB: Math.max(s.peakRssKiB, now.rssKiB), peakFds: Math.max(s.peakFds, now.fds) });
    }
  };
  const loop = (async () => { while (running) { await sample().catch(() => {}); await sleep(every); } })();
  return {
    async stop() {
      running = false;
      await loop;
      await sample().catch(() => {});
      const jobsEnded = [...ended.values()].reduce((a, b) => a + b, 0);
      const perInstance = [...seen].map(([label, s]) => ({ label, since: s.first, peakRssKiB: s.peakRssKiB, peakFds: s.peakFds, end: resources(cluster.instances.find((i) => i.label === label)) }));
      return { jobsEnded, perInstance };
    },
  };
}
