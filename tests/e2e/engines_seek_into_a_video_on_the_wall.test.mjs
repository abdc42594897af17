// A video on the wall can be sought into in every engine: the wall plays
// its shareable copy (the server's H.264 MP4 of it, with no metadata) from
// its media URL, which answers HTTP Range requests (206); after a seek to
// 2.5 s, `currentTime` is there, and the server counted partial answers
// (upload_once_media_answers_total{answer="partial"}) for it. WebKitGTK
// plays H.264 through GStreamer's libav plugins (setup installs them).
//
// The fixture, fixtures/seek.webm (22 KB), is 4 s of ffmpeg's test pattern,
// 64×48 at 5 frames per second, VP8, every frame a key frame:
//   ffmpeg -f lavfi -i "testsrc=size=64x48:rate=5:duration=4" \
//     -c:v libvpx -crf 40 -b:v 20k -g 1 -an seek.webm
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startServer, createEvent, wallUrl, until, uploadThroughApi } from "./harness.mjs";
import { skipUnless, openEngine } from "./engines.mjs";

const VIDEO = readFileSync(new URL("./fixtures/seek.webm", import.meta.url));

let server;
before(async () => { server = await startServer("seek"); });
after(async () => { await server?.stop(); });


/** How many media answers were partial (206) so far. */
async function partialAnswers() {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith('upload_once_media_answers_total{answer="partial"}'));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

for (const engine of ["chromium", "firefox", "webkit"]) {
  test(`${engine}: a video on the wall seeks through range requests`, { skip: skipUnless(engine) }, async () => {
    const ev = await createEvent(server, { moderation: "none", types: ["video/webm"] });
    await uploadThroughApi(server, ev, "party.webm", "video/webm", VIDEO);
    const before = await partialAnswers();
    const page = await openEngine(engine);
    try {
      await page.goto(wallUrl(server, ev));
      await until("the video on the wall", () => page.evaluate(() => !!document.querySelector("[data-testid='wall-item'] video")), 20_000);
      await until("its metadata", () => page.evaluate(() => document.querySelector("video").readyState >= 1), 20_000);
      const duration = await page.evaluate(() => document.querySelector("video").duration);
      assert.ok(Math.abs(duration - 4) < 0.5, `duration ${duration}`);
      const at = await page.evaluate(() => new Promise((resolve, reject) => {
        const video = document.querySelector("video");
        video.pause();
        video.addEventListener("seeked", () => resolve(video.currentTime), { once: true });
        video.addEventListener("error", () => reject(new Error(`media error ${video.error && video.error.code}`)), { once: true });
        video.currentTime = 2.5;
      }));
      assert.ok(Math.abs(at - 2.5) < 0.3, `currentTime after the seek: ${at}`);
      const seekable = await page.evaluate(() => {
        const s = document.querySelector("video").seekable;
        return s.length ? s.end(s.length - 1) : 0;
      });
      assert.ok(seekable > 3.5, `seekable to ${seekable}`);
      const partial = await partialAnswers();
      assert.ok(partial > before, `the server answered ranges (206): ${before} → ${partial}`);
    } finally {
      await page.close();
    }
  });
}
