// The host's card says what is coming: while a video's poster and shareable
// copy are being made its card says "Processing…", and once they are made it
// no longer does; a file the server could make nothing of says why on its
// card. The server runs ffprobe through a gate the test opens, so the
// rendition job is held at its first step for as long as the test looks.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, createEvent, hostMedia, hostUrl, uploadThroughApi, until } from "./harness.mjs";
import { launch } from "./pages.mjs";

let server, browser, dir, gate, video;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "host-processing-"));
  gate = join(dir, "open");
  // ffprobe, once the gate exists (`-version`, asked at start, answers at once).
  const ffprobe = join(dir, "ffprobe");
  writeFileSync(ffprobe, `#!/bin/sh
[ "$1" = "-version" ] || while [ ! -e '${gate}' ]; do sleep 0.05; done
exec ffprobe "$@"
`);
  chmodSync(ffprobe, 0o755);
  const mp4 = join(dir, "clip.mp4");
  execFileSync("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x96:rate=15:duration=2",
    "-c:v", "libx264", "-pix_fmt", "yuv420p", "-y", mp4], { stdio: ["ignore", "ignore", "inherit"] });
  video = readFileSync(mp4);
  server = await startServer("host-processing", ["--ffprobe", ffprobe]);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The card of the media with this filename. */
const card = (host, name) => host.$(`li[aria-label^="${name} "]`);

test("a video's card says Processing until its copy is made, and a file with no preview says why", async () => {
  const ev = await createEvent(server, { types: ["image/*", "video/*"] });
  await uploadThroughApi(server, ev, "clip.mp4", "video/mp4", video);
  await uploadThroughApi(server, ev, "broken.mp4", "video/mp4", Buffer.from("not a video at all ".repeat(100)));
  const desk = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const host = await desk.newPage();
  await host.goto(hostUrl(server, ev, "&refresh_ms=1000"));
  await until("both cards", async () => (await host.$$("[data-testid='pending-item']")).length === 2);

  // Held at the gate: both are still being made.
  for (const m of await hostMedia(server, ev)) assert.equal(m.preview, "pending", m.filename);
  for (const name of ["clip.mp4", "broken.mp4"]) {
    const badge = await (await card(host, name)).$("[data-testid='processing']");
    assert.ok(badge, `${name}: a processing badge`);
    assert.equal((await badge.textContent()).trim(), "Processing…");
  }

  writeFileSync(gate, "");
  await until("both previews to be decided", async () => (await hostMedia(server, ev)).every((m) => m.preview !== "pending"), 60_000);
  const byName = Object.fromEntries((await hostMedia(server, ev)).map((m) => [m.filename, m]));
  assert.equal(byName["clip.mp4"].preview, "ready");
  assert.equal(byName["broken.mp4"].preview, "placeholder");

  // The page's next read makes both cards again.
  await until("the badges to go", async () => {
    const left = await host.$$("[data-testid='processing']");
    return left.length === 0;
  });
  const clip = await card(host, "clip.mp4");
  assert.equal(await clip.$("[data-testid='preview-reason']"), null, "a made video has no reason");
  assert.ok(await clip.$("video"), "and plays its copy");
  const reason = await (await card(host, "broken.mp4")).$eval("[data-testid='preview-reason']", (el) => el.textContent.trim());
  assert.equal(reason, `No preview: ${byName["broken.mp4"].preview_reason}`);
  assert.match(reason, /^No preview: \S/);
  await desk.close();
});
