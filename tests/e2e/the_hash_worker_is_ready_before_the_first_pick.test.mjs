// The page's hash worker (where a whole photo is hashed before its
// authorize) is made once the uploader is open, before any photo is picked
// (issue 34): a worker's start is 25–50 ms in Chromium here, which would
// otherwise lie between the first pick and the first file's first byte.
// The photos picked later are hashed in that same worker.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, photos } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("hash-worker-ready"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** The workers the page has made that run the hashing script: how many
 * messages (files to hash) each was sent. */
const hashWorkers = (page) => page.evaluate(async () => {
  const sent = [];
  for (const [url, messages] of window.__workers) {
    const script = window.__blobs.get(url); // (the page's CSP lets no fetch read a blob: URL)
    if (script && (await script.text()).includes("SHA-256")) sent.push(messages);
  }
  return sent;
});

test("the hash worker is made once the uploader is open, and the first pick is hashed in it", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const context = await browser.newContext();
  await context.addInitScript(() => {
    const Real = window.Worker;
    window.__workers = new Map(); // script URL → messages sent to it
    window.__blobs = new Map(); // blob: URL → its Blob
    const createObjectURL = URL.createObjectURL;
    URL.createObjectURL = (blob) => {
      const url = createObjectURL(blob);
      window.__blobs.set(url, blob);
      return url;
    };
    window.Worker = class extends Real {
      constructor(url, options) {
        super(url, options);
        this.scriptUrl = String(url);
        window.__workers.set(this.scriptUrl, 0);
      }
      postMessage(...args) {
        window.__workers.set(this.scriptUrl, window.__workers.get(this.scriptUrl) + 1);
        return super.postMessage(...args);
      }
    };
  });
  const page = await openGuest(context, guestUrl(server, ev));
  let authorizes = 0;
  page.on("request", (r) => {
    if (r.method() === "POST" && /\/v1\/events\/[^/]+\/attempts$/.test(new URL(r.url()).pathname)) authorizes += 1;
  });
  // Waits for the worker to be made (an event in the page), up to 10 s.
  let made = [];
  for (const started = Date.now(); made.length === 0 && Date.now() - started < 10_000;) {
    made = await hashWorkers(page);
    if (made.length === 0) await page.waitForTimeout(50);
  }
  assert.deepEqual(made, [0], "one hash worker is made before anything is picked, and is sent nothing yet");
  assert.equal(authorizes, 0, "nothing was picked or sent yet");

  await pick(page, photos(3, 90_000, "hw"));
  await untilAllSaved(page, 3);
  assert.deepEqual(await hashWorkers(page), [3], "the three photos were hashed in the worker made ahead, and no other was made");
  assert.equal((await hostMedia(server, ev)).length, 3, "one media per photo");
  await context.close();
});
