// A hash worker that stops answering without an `error` event (the browser
// ended it, or it hangs) must not hold its files for ever: after 10 s of
// silence with hashes waiting, the page gives it up and hashes them itself
// (issue 34). Here the page's hash worker is made as usual, but never gets
// the files it is sent: every photo is still saved once, and each authorize
// carries the SHA-256 of its own file's bytes.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startServer, createEvent, hostMedia, guestUrl, photos } from "./harness.mjs";
import { authorizeHashes, launch, openGuest, pick, untilAllSaved } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("silent-hash-worker"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("photos whose hash worker falls silent are hashed on the page and saved once each", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const context = await browser.newContext();
  await context.addInitScript(() => {
    // Workers are made from Blobs: the hashing one is told apart by its script.
    const scripts = new Map(); // blob: URL → its Blob
    const createObjectURL = URL.createObjectURL;
    URL.createObjectURL = (blob) => {
      const url = createObjectURL(blob);
      scripts.set(url, blob);
      return url;
    };
    window.__swallowed = 0;
    const Real = window.Worker;
    window.Worker = class extends Real {
      constructor(url, options) {
        super(url, options);
        this.hashing = scripts.get(String(url))?.text().then((text) => text.includes("SHA-256"));
      }
      postMessage(...args) {
        // A hash worker's files never reach it, and it never answers.
        Promise.resolve(this.hashing).then((hashing) => {
          if (hashing) window.__swallowed += 1;
          else super.postMessage(...args);
        });
      }
    };
  });
  const page = await openGuest(context, guestUrl(server, ev));
  const sent = authorizeHashes(page); // file name → the sha256 its authorize carried
  const files = photos(3, 100_000, "sw");
  await pick(page, files);
  await untilAllSaved(page, 3, 40_000);

  assert.ok(await page.evaluate(() => window.__swallowed) >= 1, "the hash worker was sent files and answered none");
  for (const f of files) {
    assert.equal(sent.get(f.name), createHash("sha256").update(f.buffer).digest("hex"), `${f.name}: its authorize carries its own hash`);
  }
  assert.equal((await hostMedia(server, ev)).length, 3, "one media per photo");
  await context.close();
});
