// Issue 28: an honest guest's add → confirmed for a 4 MiB photo, through the
// guest page in headless Chromium, idle and then while one hostile client
// address holds the most each cap lets it, all at once:
//   - slow PUTs: --max-puts-per-client of them, each trickling just above
//     --put-min-rate (so none is cut), renewed as they end;
//   - an SSE storm: --max-live-per-client live walls held open, and a
//     reconnect loop on top (refused past the cap);
//   - a session flood: joins as fast as the client can send them (refused
//     past --rate-sessions and its share of the event's sessions);
//   - a render flood: 49-megapixel PNGs of a few KB (just under the pixel
//     cap), uploaded one after another (decoded until the session's budget,
//     then deferred).
// The hostile client's requests carry X-Forwarded-For (the server trusts
// 127.0.0.1 as a proxy), so it is one address (two: the render flood comes
// from a second one, as the slow PUTs hold every PUT slot of the first) and
// the browser another.
// Reports p50 and p99 of each phase, and the server's resident memory and
// open file descriptors at the end of each phase (from /proc).
//
//   node bench/under_attack.mjs [--samples 30] [--uplink-mbit 20] [--put-addresses 8]
//
// Environment as the e2e tests (UPLOAD_ONCE_SERVER_BIN, UPLOAD_ONCE_CHROMIUM).
// Everything runs on loopback on this machine's two cores: the attack's
// own load generator shares them with the server and the browser.
import { readFileSync, readdirSync } from "node:fs";
import { request } from "node:http";
import { deflateSync } from "node:zlib";
import { startServer, createEvent, guestUrl, until } from "../tests/e2e/harness.mjs";
import { launch, openGuest } from "../tests/e2e/pages.mjs";
import { honestSamples as guestSamples, machineBusySeconds, percentile } from "./honest_guest.mjs";

const args = process.argv.slice(2);
const arg = (name, fallback) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const SAMPLES = arg("--samples", 30);
// `--skip renders,puts,walls,sessions` leaves those attacks out (to see what
// each costs).
const SKIP = new Set(args.includes("--skip") ? args[args.indexOf("--skip") + 1].split(",") : []);
const HOSTILE = "203.0.113.66";
// The render flood's address: the slow PUTs hold every PUT slot of the
// first one, so its bombs would only get 429s.
const BOMBER = "203.0.113.67";
const PUTS = 128; // --max-puts-per-client's default
const WALLS = 256; // --max-live-per-client's default
const PUT_RATE = 10 * 1024; // bytes a second, above the 8 KiB/s minimum
// The bombs' edge: 7000 × 7000 is 49 MP, just under the 50 MP cap
// (`--bomb-edge 100` uploads as many photos with nothing to decode).
const BOMB_EDGE = arg("--bomb-edge", 7000);
// `--uplink-mbit 20`: the honest guest's page sends over an emulated uplink
// of that many Mbit/s (CDP), as a phone at a venue does; 0: loopback.
const UPLINK_MBIT = arg("--uplink-mbit", 0);
// `--put-addresses 8` (issue 49): the slow PUTs come from that many client
// addresses, PUTS from each, so together they ask for more than the whole
// pool (--max-puts-in-flight, 512), all through the hostile event's code.
const PUT_ADDRESSES = arg("--put-addresses", 1);
const putAddress = (i) => (PUT_ADDRESSES > 1 ? `203.0.113.${100 + (i % PUT_ADDRESSES)}` : HOSTILE);


function serverVitals(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  return { rssMiB: +(rss / (1 << 20)).toFixed(1), fds };
}

/** CPU seconds a process used so far (user + system), from /proc. */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** What a phase cost: wall time, and CPU of the server, of this process (the attack's generator), and of the whole machine. */
async function measured(pid, phase) {
  const start = { wall: performance.now(), server: cpuSeconds(pid), self: process.cpuUsage(), machine: machineBusySeconds() };
  const result = await phase();
  const wall = (performance.now() - start.wall) / 1000;
  const self = process.cpuUsage(start.self);
  const cpu = {
    wall_s: +wall.toFixed(1),
    server_cpu_s: +(cpuSeconds(pid) - start.server).toFixed(1),
    generator_cpu_s: +((self.user + self.system) / 1e6).toFixed(1),
    machine_busy: +((machineBusySeconds() - start.machine) / (wall * 2)).toFixed(2),
  };
  return { result, cpu };
}

/** A JSON call from the hostile address; resolves to {status, body}. */
function hostileJson(base, method, path, { token, body, from = HOSTILE, extra = {} } = {}) {
  return new Promise((resolve) => {
    const url = new URL(path, base);
    const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
    const req = request(url, {
      method,
      agent: false,
      headers: {
        "x-forwarded-for": from,
        ...(data ? { "content-type": "application/json", "content-length": data.length } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...extra,
      },
    }, (res) => {
      let text = "";
      res.on("data", (d) => { text += d; });
      res.on("end", () => { let parsed = null; try { parsed = JSON.parse(text); } catch {} resolve({ status: res.statusCode, body: parsed }); });
    });
    req.on("error", () => resolve({ status: 0, body: null }));
    if (data) req.write(data);
    req.end();
  });
}

/** A valid 1-bit PNG of width × height, all white: a few KB. */
function bomb(width, height, seed) {
  const row = Math.ceil(width / 8) + 1;
  const raw = Buffer.alloc(row * height, 0xff);
  for (let y = 0; y < height; y++) raw[y * row] = 0;
  // One changed byte per bomb: no two are the same file.
  raw[1] = seed & 0xff; raw[2] = (seed >> 8) & 0xff;
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4); ihdr[8] = 1; ihdr[9] = 0;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw, { level: 9 })), chunk("IEND", Buffer.alloc(0)),
  ]);
}

const CRC = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
function crc32(buf) { let c = 0xffffffff; for (const b of buf) c = CRC[(c ^ b) & 0xff] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; }

async function join(base, ev, from = HOSTILE) {
  const r = await hostileJson(base, "POST", `/v1/events/${ev.event.slug}/sessions`, { body: { guest_code: ev.guest_code }, from });
  return r.status === 201 ? r.body.session_token : null;
}

/** One slow PUT: authorizes 4 MiB, then trickles it at PUT_RATE until told to stop or cut. */
async function slowPut(base, ev, token, stopped, seq, from = HOSTILE) {
  const size = 4 << 20;
  const id = crypto.randomUUID();
  const a = await hostileJson(base, "POST", `/v1/events/${ev.event.slug}/attempts`, {
    token, body: { id, filename: `slow-${seq}.jpg`, size, content_type: "image/jpeg" }, from,
  });
  if (a.status !== 201 || !a.body.upload) return;
  const { url, headers } = a.body.upload;
  await new Promise((resolve) => {
    const target = new URL(url);
    const req = request(target, { method: "PUT", agent: false, headers: { ...headers, "x-forwarded-for": from, "content-length": size } }, (res) => { res.resume(); res.on("end", resolve); });
    req.on("error", resolve);
    let sent = 0;
    const tick = setInterval(() => {
      if (stopped.value || sent >= size - 1024) { clearInterval(tick); req.destroy(); resolve(); return; }
      const n = Math.floor(PUT_RATE / 10);
      req.write(Buffer.alloc(n, 1)); sent += n;
    }, 100);
  });
}

function attack(base, ev, stopped) {
  const counts = { putsStarted: 0, walls: 0, wallsRefused: 0, joins: 0, joinsRefused: 0, bombs: 0, bombsRefused: 0 };
  const loops = [];
  // Slow PUTs: PUTS at a time, one session per 100 (its unconfirmed cap is 200).
  if (!SKIP.has("puts")) loops.push((async () => {
    const tokens = new Map();
    const slots = Array.from({ length: PUTS * PUT_ADDRESSES }, async (_, i) => {
      const from = putAddress(i);
      while (!stopped.value) {
        if (!tokens.get(from) || counts.putsStarted % 100 === 0) tokens.set(from, (await join(base, ev, from)) ?? tokens.get(from));
        const token = tokens.get(from);
        if (!token) { await new Promise((r) => setTimeout(r, 1000)); continue; }
        counts.putsStarted++;
        const began = Date.now();
        await slowPut(base, ev, token, stopped, `${i}-${counts.putsStarted}`, from);
        // Refused (or cut) at once: try again a second later, as a client
        // honouring Retry-After does (a loop without a pause measures this
        // process's own CPU, not the server's shares).
        if (Date.now() - began < 1000) await new Promise((r) => setTimeout(r, 1000));
      }
    });
    await Promise.all(slots);
  })());
  // SSE storm: WALLS held open, then connects that are refused.
  const held = [];
  if (!SKIP.has("walls")) loops.push((async () => {
    while (!stopped.value) {
      await new Promise((resolve) => {
        const req = request(new URL(`/v1/events/${ev.event.slug}/wall/live?code=${ev.guest_code}`, base), { agent: false, headers: { "x-forwarded-for": HOSTILE, accept: "text/event-stream" } }, (res) => {
          if (res.statusCode === 200) { counts.walls++; held.push(req); res.on("data", () => {}); } else { counts.wallsRefused++; res.resume(); }
          resolve();
        });
        req.on("error", resolve);
        req.end();
      });
      if (held.length >= WALLS) await new Promise((r) => setTimeout(r, 50));
    }
    for (const req of held) req.destroy();
  })());
  // Session flood.
  if (!SKIP.has("sessions")) loops.push((async () => {
    while (!stopped.value) {
      const r = await hostileJson(base, "POST", `/v1/events/${ev.event.slug}/sessions`, { body: { guest_code: ev.guest_code } });
      if (r.status === 201) counts.joins++; else counts.joinsRefused++;
    }
  })());
  // Render flood: 49 MP bombs, one after another, from one session.
  if (!SKIP.has("renders")) loops.push((async () => {
    let token = null;
    let seq = 0;
    while (!stopped.value) {
      token = token ?? (await join(base, ev, BOMBER));
      if (!token) { await new Promise((r) => setTimeout(r, 1000)); continue; }
      const bytes = bomb(BOMB_EDGE, BOMB_EDGE, ++seq);
      const id = crypto.randomUUID();
      const a = await hostileJson(base, "POST", `/v1/events/${ev.event.slug}/attempts`, {
        token, from: BOMBER, body: { id, filename: `bomb-${seq}.png`, size: bytes.length, content_type: "image/png" },
      });
      if (a.status !== 201 || !a.body.upload) { await new Promise((r) => setTimeout(r, 200)); continue; }
      const put = await fetch(a.body.upload.url, { method: "PUT", headers: { ...a.body.upload.headers, "x-forwarded-for": BOMBER }, body: bytes }).catch(() => null);
      if (!put || !put.ok) continue;
      const c = await hostileJson(base, "POST", `/v1/attempts/${id}/confirm`, { token, from: BOMBER, extra: { "idempotency-key": id }, body: { size: bytes.length, content_type: "image/png" } });
      if (c.status === 200) counts.bombs++; else counts.bombsRefused++;
    }
  })());
  return { counts, done: Promise.all(loops) };
}

/** The honest guest's samples of one phase (its photos its own: "warm" and "idle" once shared seeds, so the first three idle photos were duplicates, confirmed without a transfer). */
const honestSamples = (page, n, label) => guestSamples(page, n, label, ["warm", "idle", "attacked"]);

const server = await startServer("under-attack", ["--trusted-proxy", "127.0.0.1"]);
const browser = await launch();
try {
  const honestEvent = await createEvent(server, { moderation: "none", maxFileBytes: 50 << 20 });
  const hostileEvent = await createEvent(server, { moderation: "none", maxFileBytes: 50 << 20 });
  const context = await browser.newContext();
  const page = await openGuest(context, guestUrl(server, honestEvent));
  if (UPLINK_MBIT > 0) {
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false, latency: 20, downloadThroughput: (UPLINK_MBIT * 4e6) / 8, uploadThroughput: (UPLINK_MBIT * 1e6) / 8,
    });
  }
  await honestSamples(page, 3, "warm");

  const { result: idle, cpu: idleCpu } = await measured(server.child.pid, () => honestSamples(page, SAMPLES, "idle"));
  const idleVitals = serverVitals(server.child.pid);

  const stopped = { value: false };
  const { counts, done } = attack(server.base, hostileEvent, stopped);
  // The attack at its strongest before the honest guest starts: every PUT
  // slot and every live wall of the address held.
  const progress = setInterval(() => console.error(`attack: ${JSON.stringify(counts)}`), 10_000);
  await until("the attack to hold its caps", async () =>
    (SKIP.has("puts") || counts.putsStarted >= PUTS * PUT_ADDRESSES) && (SKIP.has("walls") || counts.walls >= WALLS), 120_000, 100);
  clearInterval(progress);
  const { result: attacked, cpu: attackCpu } = await measured(server.child.pid, () => honestSamples(page, SAMPLES, "attacked"));
  const attackVitals = serverVitals(server.child.pid);
  stopped.value = true;
  await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))]);

  const row = (name, t, v, cpu) => ({ phase: name, samples: t.length, p50_ms: Math.round(percentile(t, 50)), p99_ms: Math.round(percentile(t, 99)), rss_mib: v.rssMiB, fds: v.fds, ...cpu });
  const report = {
    measured_at: new Date().toISOString(),
    skipped: [...SKIP],
    photo_bytes: 4 << 20,
    attack: counts,
    uplink_mbit: UPLINK_MBIT || "loopback",
    put_addresses: PUT_ADDRESSES,
    phases: [row("idle", idle, idleVitals, idleCpu), row("under attack", attacked, attackVitals, attackCpu)],
  };
  report.p99_ratio = +(report.phases[1].p99_ms / report.phases[0].p99_ms).toFixed(2);
  report.p50_ratio = +(report.phases[1].p50_ms / report.phases[0].p50_ms).toFixed(2);
  console.log(JSON.stringify(report, null, 2));
} finally {
  await browser.close();
  await server.stop();
}
