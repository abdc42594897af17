// Issue 32: an honest guest's add → confirmed for a 4 MiB photo, through
// the guest page in headless Chromium, idle and then while the server
// transcodes phone video (1080p HEVC, 20 s each, which the server encodes
// to H.264: the heaviest job it has), with 1 and with 2 rendition workers.
// Target: p99 while transcoding ≤ 1.5× idle.
//
// The videos come from another guest of another event, one after another,
// so that a transcode runs through the whole phase (checked: an ffmpeg
// child of the server is running when each sample starts). Each is made
// once by ffmpeg here, from a different test pattern, so none is a
// duplicate of another.
//
// Reports, per worker count and phase: p50/p99, the videos sent, how fast
// the job pool made the phase's photos' renditions (photos a minute, from
// the phase's start until its last photo is made), and the CPU used.
//
//   node bench/while_transcoding.mjs [--samples 20] [--workers 1,2]
//
// Environment as the e2e tests (UPLOAD_ONCE_SERVER_BIN: use the release
// build, as deployed; UPLOAD_ONCE_CHROMIUM). Loopback on this machine's
// two cores: the browser, the server, ffmpeg and this script share them.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, createEvent, guestUrl, until } from "../tests/e2e/harness.mjs";
import { launch, openGuest } from "../tests/e2e/pages.mjs";
import { honestSamples as guestSamples, machineBusySeconds, percentile } from "./honest_guest.mjs";

const args = process.argv.slice(2);
const arg = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const SAMPLES = Number(arg("--samples", 20));
const WORKERS = String(arg("--workers", "1,2")).split(",").map(Number);
const PATTERNS = ["testsrc", "testsrc2", "smptebars", "rgbtestsrc", "smptehdbars", "yuvtestsrc"];

const PHASES = ["warm", "idle", "transcoding"];
/** Whether an ffmpeg child of `pid` is running (a transcode or a poster). */
function transcoding(pid) {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8").trim();
      const [, name, rest] = /^\d+ \((.*)\) (.*)$/.exec(stat);
      if (name === "ffmpeg" && Number(rest.split(" ")[1]) === pid) return true;
    } catch { /* gone */ }
  }
  return false;
}

/** A 20 s 1080p HEVC .mov with sound, no faststart, from `pattern`. */
function phoneVideo(dir, pattern) {
  const out = join(dir, `${pattern}.mov`);
  execFileSync("ffmpeg", [
    "-loglevel", "error", "-f", "lavfi", "-i", `${pattern}=size=1920x1080:rate=30`, "-f", "lavfi", "-i", "sine=frequency=440",
    "-t", "20", "-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=none", "-tag:v", "hvc1",
    "-pix_fmt", "yuv420p", "-c:a", "aac", "-y", out,
  ]);
  return readFileSync(out);
}

async function api(server, method, path, { token, body, extra = {} } = {}) {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra },
    body: body && JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/** Uploads videos one after another (each to an event of its own), until stopped. */
function videoLoad(server, videos, stopped) {
  const counts = { uploaded: 0 };
  const done = (async () => {
    for (let n = 0; !stopped.value; n++) {
      const ev = await createEvent(server, { moderation: "none", maxFileBytes: 200 << 20, types: ["video/*"] });
      const { body: { session_token: token } } = await api(server, "POST", `/v1/events/${ev.event.slug}/sessions`, { body: { guest_code: ev.guest_code } });
      const bytes = videos[n % videos.length];
      const id = crypto.randomUUID();
      const a = await api(server, "POST", `/v1/events/${ev.event.slug}/attempts`, { token, body: { id, filename: `IMG_${n}.MOV`, size: bytes.length, content_type: "video/quicktime" } });
      if (a.status !== 201 || !a.body.upload) throw new Error(`authorize a video: ${a.status} ${JSON.stringify(a.body)}`);
      const put = await fetch(a.body.upload.url, { method: "PUT", headers: a.body.upload.headers, body: bytes });
      if (!put.ok) throw new Error(`PUT a video: ${put.status}`);
      const c = await api(server, "POST", `/v1/attempts/${id}/confirm`, { token, extra: { "idempotency-key": id }, body: { size: bytes.length, content_type: "video/quicktime" } });
      if (c.status !== 200) throw new Error(`confirm a video: ${c.status}`);
      counts.uploaded++;
      // The next once this one's job is running or done: a queue of one.
      await until("the video's job to start", async () => transcoding(server.child.pid) || stopped.value, 120_000, 100).catch(() => {});
      await until("the transcode to end", async () => !transcoding(server.child.pid) || stopped.value, 600_000, 100);
    }
  })();
  return { counts, done };
}

async function honestSamples(server, page, n, label, check) {
  let running = 0;
  const times = await guestSamples(page, n, label, PHASES, async () => {
    if (check) {
      await until("a transcode to run", async () => transcoding(server.child.pid), 120_000, 50);
      running++;
    }
  });
  return { times, startedDuringTranscode: running };
}

/** How many of the event's photos have their renditions made (the host's list). */
async function photosMade(server, ev) {
  const { body } = await api(server, "GET", `/v1/events/${ev.event.slug}/media?limit=500`, { token: ev.host_token });
  return body.media.filter((m) => m.preview === "ready").length;
}

async function phase(server, ev, page, label, check) {
  // What came before is made first, so the count below is this phase's.
  const { body: listed } = await api(server, "GET", `/v1/events/${ev.event.slug}/media?limit=500`, { token: ev.host_token });
  await until("the earlier photos to be made", async () => (await photosMade(server, ev)) >= listed.media.length, 600_000, 100);
  const madeBefore = listed.media.length;
  const wall = performance.now();
  const busy = machineBusySeconds();
  const { times, startedDuringTranscode } = await honestSamples(server, page, SAMPLES, label, check);
  const seconds = (performance.now() - wall) / 1000;
  const machine = +((machineBusySeconds() - busy) / (seconds * 2)).toFixed(2);
  // The job pool's throughput: the phase's photos made, from its start
  // until the last of them is made (the transcode still running).
  await until("the phase's photos to be made", async () => (await photosMade(server, ev)) >= madeBefore + SAMPLES, 600_000, 100);
  const renderSeconds = (performance.now() - wall) / 1000;
  return {
    phase: label,
    samples: times.length,
    p50_ms: Math.round(percentile(times, 50)),
    p99_ms: Math.round(percentile(times, 99)),
    samples_started_during_a_transcode: startedDuringTranscode,
    machine_busy: machine,
    photos_made_per_minute: +((SAMPLES / renderSeconds) * 60).toFixed(1),
    last_photo_made_after_s: +renderSeconds.toFixed(1),
  };
}

const dir = mkdtempSync(join(tmpdir(), "while-transcoding-"));
const videos = PATTERNS.slice(0, 3).map((p) => phoneVideo(dir, p));
rmSync(dir, { recursive: true, force: true });
process.on("unhandledRejection", (e) => { console.error(`unhandled: ${e?.stack ?? e}`); });
const browser = await launch();
const report = { measured_at: new Date().toISOString(), photo_bytes: 4 << 20, video: "20 s 1080p30 HEVC + AAC .mov, encoded to H.264 by the server", uplink: "loopback", runs: [] };
try {
  for (const workers of WORKERS) {
    const server = await startServer(`while-transcoding-${workers}`, ["--rendition-workers", String(workers)]);
    try {
      const ev = await createEvent(server, { moderation: "none", maxFileBytes: 50 << 20 });
      const context = await browser.newContext();
      const page = await openGuest(context, guestUrl(server, ev));
      await honestSamples(server, page, 3, "warm", false);
      const idle = await phase(server, ev, page, "idle", false);
      const stopped = { value: false };
      const load = videoLoad(server, videos, stopped);
      load.done.catch((e) => { console.error(`the video load failed: ${e.stack}`); });
      const busy = await phase(server, ev, page, "transcoding", true);
      stopped.value = true;
      await Promise.race([load.done, new Promise((r) => setTimeout(r, 120_000))]);
      report.runs.push({ rendition_workers: workers, videos_uploaded: load.counts.uploaded, phases: [idle, busy], p99_ratio: +(busy.p99_ms / idle.p99_ms).toFixed(2), p50_ratio: +(busy.p50_ms / idle.p50_ms).toFixed(2) });
      await context.close();
    } finally {
      await server.stop();
    }
  }
  console.log(JSON.stringify(report, null, 2));
} catch (e) {
  console.error(e.stack);
  console.log(JSON.stringify(report, null, 2));
  process.exitCode = 1;
} finally {
  await browser.close();
}
