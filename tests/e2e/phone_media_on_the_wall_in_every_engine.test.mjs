// A phone's media on the wall, in every engine: a guest uploads an
// iPhone-like HEVC `.mov` (rotated 90°, with a location and a device model
// in its tags, its index at the end) and a HEIC photo. The wall shows the
// photo (a JPEG rendition: no engine here decodes HEIC itself) and the
// video with its poster; the video is the shareable H.264 MP4, shown
// upright (portrait), and it plays and seeks. Neither carries the
// location. Fixtures are made here by ffmpeg and heif-enc (cargo xtask
// setup installs both).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, createEvent, wallUrl, until, uploadThroughApi } from "./harness.mjs";
import { skipUnless, openEngine } from "./engines.mjs";

const LOCATION = "+48.8584+002.2945/";

/** The HEVC .mov and the HEIC photo, made by the tools. */
function fixtures() {
  const dir = mkdtempSync(join(tmpdir(), "phone-media-"));
  try {
    const run = (tool, args) => execFileSync(tool, args, { stdio: ["ignore", "ignore", "inherit"] });
    const plain = join(dir, "plain.mov");
    run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x96:rate=15:duration=4", "-f", "lavfi", "-i", "sine=duration=4",
      "-c:v", "libx265", "-tag:v", "hvc1", "-x265-params", "log-level=error:keyint=15", "-pix_fmt", "yuv420p", "-c:a", "aac",
      "-metadata", `location=${LOCATION}`, "-metadata", "model=Pocketphone 15 Pro", "-movflags", "use_metadata_tags", "-y", plain]);
    // ffmpeg 5 writes a rotation matrix only when it copies a stream.
    const mov = join(dir, "IMG_0001.MOV");
    run("ffmpeg", ["-v", "error", "-i", plain, "-map", "0", "-c", "copy", "-metadata:s:v:0", "rotate=90", "-movflags", "use_metadata_tags", "-y", mov]);
    const png = join(dir, "photo.png");
    run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240", "-frames:v", "1", "-y", png]);
    const heic = join(dir, "IMG_0002.HEIC");
    run("heif-enc", ["-q", "80", "-o", heic, png]);
    return { mov: readFileSync(mov), heic: readFileSync(heic) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let server;
let files;
before(async () => {
  files = fixtures();
  server = await startServer("phone-media");
});
after(async () => { await server?.stop(); });


for (const engine of ["chromium", "firefox", "webkit"]) {
  test(`${engine}: an iPhone's HEVC .mov and HEIC photo on the wall`, { skip: skipUnless(engine) }, async () => {
    const ev = await createEvent(server, { moderation: "none", types: ["image/*", "video/*"] });
    const video = await uploadThroughApi(server, ev, "IMG_0001.MOV", "video/quicktime", files.mov);
    const photo = await uploadThroughApi(server, ev, "IMG_0002.HEIC", "image/heic", files.heic);
    // What the wall is given carries no location.
    for (const url of [video.url, photo.url]) {
      let r = await fetch(url);
      for (let n = 0; r.status === 503 && n < 20; n++) r = await fetch(url);
      assert.equal(r.status, 200, url);
      const bytes = Buffer.from(await r.arrayBuffer());
      assert.ok(!bytes.includes(LOCATION), `${url} carries the location`);
    }
    const page = await openEngine(engine);
    try {
      await page.goto(wallUrl(server, ev));
      const item = (id) => `[data-testid='wall-item'][data-id='${id}']`;
      // The photo: its rendition, loaded.
      await until("the HEIC photo shown", () => page.evaluate((sel) => {
        const img = document.querySelector(`${sel} img`);
        return !!img && img.complete && img.naturalWidth === 320 && img.naturalHeight === 240;
      }, item(photo.id)), 30_000);
      // The video: its poster, then the shareable copy, upright.
      await until("the video with its poster", () => page.evaluate((sel) => {
        const v = document.querySelector(`${sel} video`);
        return !!v && v.poster.includes("/thumb?") && v.readyState >= 1;
      }, item(video.id)), 30_000);
      const shown = await page.evaluate((sel) => {
        const v = document.querySelector(`${sel} video`);
        return { width: v.videoWidth, height: v.videoHeight, duration: v.duration };
      }, item(video.id));
      assert.deepEqual([shown.width, shown.height], [96, 160], `upright: ${JSON.stringify(shown)}`);
      assert.ok(Math.abs(shown.duration - 4) < 0.5, `duration ${shown.duration}`);
      const poster = await page.evaluate((sel) => new Promise((resolve) => {
        const img = new Image();
        img.onload = () => resolve([img.naturalWidth, img.naturalHeight]);
        img.onerror = () => resolve(null);
        img.src = document.querySelector(`${sel} video`).poster;
      }), item(video.id));
      assert.deepEqual(poster, [96, 160], "the poster is upright");
      const at = await page.evaluate((sel) => new Promise((resolve, reject) => {
        const v = document.querySelector(`${sel} video`);
        v.pause();
        v.addEventListener("seeked", () => resolve(v.currentTime), { once: true });
        v.addEventListener("error", () => reject(new Error(`media error ${v.error && v.error.code}`)), { once: true });
        v.currentTime = 2.5;
      }), item(video.id));
      assert.ok(Math.abs(at - 2.5) < 0.3, `currentTime after the seek: ${at}`);
    } finally {
      await page.close();
    }
  });
}
