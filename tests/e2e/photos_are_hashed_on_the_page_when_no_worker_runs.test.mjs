// The page hashes a whole photo in a worker of its own (issue 34). Where no
// worker runs (here every worker the page makes throws as it starts, as a
// broken script or a refused one does), the hashes that were waiting on
// the worker are made on the page instead: every photo is saved once, and
// each authorize still carries the SHA-256 of its own file's bytes.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startServer, createEvent, hostMedia, guestUrl, photos } from "./harness.mjs";
import { authorizeHashes, launch, openGuest, pick, untilAllSaved } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("no-worker"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("with every worker failing at its start, photos are hashed on the page and saved once each", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const context = await browser.newContext();
  await context.addInitScript(() => {
    const Real = window.Worker;
    window.__workers = { made: 0, failed: 0 };
    window.Worker = class extends Real {
      constructor(_url, options) {
        super(URL.createObjectURL(new Blob(["throw new Error('this page runs no worker')"], { type: "text/javascript" })), options);
        window.__workers.made += 1;
        this.addEventListener("error", () => { window.__workers.failed += 1; });
      }
    };
  });
  const page = await openGuest(context, guestUrl(server, ev));
  const sent = authorizeHashes(page); // file name → the sha256 its authorize carried
  const files = photos(4, 120_000, "nw");
  await pick(page, files);
  await untilAllSaved(page, 4);

  const workers = await page.evaluate(() => window.__workers);
  assert.ok(workers.made >= 2, `the timer worker and the hash worker were both tried (${workers.made} made)`);
  assert.equal(workers.failed, workers.made, "every worker failed");
  for (const f of files) {
    assert.equal(sent.get(f.name), createHash("sha256").update(f.buffer).digest("hex"), `${f.name}: its authorize carries its own hash`);
  }
  assert.equal((await hostMedia(server, ev)).length, 4, "one media per photo");
  await context.close();
});
