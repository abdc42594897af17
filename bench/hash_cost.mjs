// What hashing files costs in the page, step by step: thirty 4 MiB Files of
// random bytes (made in the page), each read and digested with WebCrypto one
// after another, three rounds; the last round is printed. It separates the
// read (`arrayBuffer()`, or a BYOB reader of the File's stream into one
// reused buffer, as src/glue.js reads a part) from `crypto.subtle.digest`,
// and says how long the page's main thread is held meanwhile.
//
//   node bench/hash_cost.mjs
//
// Environment: UPLOAD_ONCE_CHROMIUM (default /usr/bin/chromium).
import { createServer } from "node:http";
import { chromium } from "playwright-core";

// WebCrypto wants a secure context: a page of its own on loopback.
const server = createServer((req, res) => { res.setHeader("content-type", "text/html"); res.end("<!doctype html><title>hash cost</title>"); });
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const browser = await chromium.launch({
  executablePath: process.env.UPLOAD_ONCE_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu"],
});
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  const ms = await page.evaluate(async () => {
    const MiB = 1 << 20;
    const files = [];
    for (let i = 0; i < 30; i++) {
      const a = new Uint8Array(4 * MiB);
      for (let o = 0; o < a.length; o += 65536) crypto.getRandomValues(a.subarray(o, o + 65536));
      files.push(new File([a], `f${i}.bin`));
    }
    let pool = new ArrayBuffer(4 * MiB);
    const byob = async (f) => {
      let b = pool;
      const reader = f.stream().getReader({ mode: "byob" });
      let off = 0;
      while (off < f.size) {
        const { value, done } = await reader.read(new Uint8Array(b, off, f.size - off));
        if (done) break;
        b = value.buffer;
        off += value.byteLength;
      }
      reader.releaseLock();
      pool = b;
      return new Uint8Array(b, 0, off);
    };
    const one = await files[0].arrayBuffer();
    const out = {};
    const time = async (name, fn) => {
      const t0 = performance.now();
      for (const f of files) await fn(f);
      out[name] = Math.round(performance.now() - t0);
    };
    for (let round = 0; round < 3; round++) {
      await time("arrayBuffer()", (f) => f.arrayBuffer());
      await time("arrayBuffer() + digest", async (f) => crypto.subtle.digest("SHA-256", await f.arrayBuffer()));
      await time("BYOB read into a reused buffer", byob);
      await time("BYOB read + digest", async (f) => crypto.subtle.digest("SHA-256", await byob(f)));
      await time("digest alone (one 4 MiB buffer, 30 times)", () => crypto.subtle.digest("SHA-256", one));
    }
    // Is the main thread held while files are hashed? A probe posts itself
    // a message again and again (a zero-delay turn of the event loop, not
    // clamped as setTimeout is) and keeps the longest wait between turns,
    // and the Long Tasks API lists tasks over 50 ms; both while nothing else
    // runs, then through the BYOB read + digest of the thirty files.
    const held = async (work) => {
      const longTasks = [];
      let since = Infinity;
      // Only the tasks that began in the window measured (an earlier task
      // can be reported late).
      const observer = new PerformanceObserver((list) => longTasks.push(...list.getEntries().filter((e) => e.startTime >= since).map((e) => e.duration)));
      observer.observe({ type: "longtask", buffered: false });
      const channel = new MessageChannel();
      let last = performance.now(), worst = 0, turns = 0, running = true;
      channel.port1.onmessage = () => {
        const now = performance.now();
        worst = Math.max(worst, now - last);
        last = now;
        turns += 1;
        if (running) channel.port2.postMessage(0);
      };
      channel.port2.postMessage(0);
      const t0 = performance.now();
      since = t0;
      await work();
      const elapsed = performance.now() - t0;
      running = false;
      await new Promise((resolve) => setTimeout(resolve, 100));
      observer.disconnect();
      channel.port1.close();
      return { elapsed: Math.round(elapsed), worstGap: Number(worst.toFixed(1)), turns, longTasks: longTasks.map(Math.round) };
    };
    out.mainThread = {
      idle: await held(() => new Promise((resolve) => setTimeout(resolve, 1000))),
      hashing: await held(async () => { for (const f of files) await crypto.subtle.digest("SHA-256", await byob(f)); }),
    };
    return out;
  });
  console.log(`30 files of 4 MiB (120 MiB), ms for all, Chromium ${browser.version()}:`);
  const { mainThread, ...steps } = ms;
  for (const [step, t] of Object.entries(steps)) console.log(`  ${step}: ${t} ms (${(120 / (t / 1000)).toFixed(0)} MiB/s)`);
  console.log("the main thread, while idle for a second and while the thirty files are read (BYOB) and digested:");
  for (const [when, m] of Object.entries(mainThread)) {
    console.log(`  ${when}: ${m.elapsed} ms, longest wait between event-loop turns ${m.worstGap} ms over ${m.turns} turns, long tasks (> 50 ms): ${m.longTasks.length ? m.longTasks.join(", ") + " ms" : "none"}`);
  }
} finally {
  await browser.close();
  server.close();
}
