// A photo whose bytes change on the guest's device after it was picked (an
// editor saves over it while the upload waits for the network) is refused
// with `file_changed`, in each engine: the browser no longer reads the
// picked file (Chromium, WebKit) or reads the new bytes, which the store
// refuses against the SHA-256 taken at the pick. Either way the card says
// why, offers no Retry (the guest picks the file again), and nothing is
// stored: no media, no object in the store.
//
// The upload is held by taking the server down after the page is ready: the
// pick is hashed and recorded (the record's SHA-256 is read from IndexedDB)
// while the authorize cannot be answered; then the file is rewritten on
// disk (same name and size, other bytes) and the server comes back.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { startServer, createEvent, guestUrl, photo, until } from "./harness.mjs";
import { skipUnless, openEngine, openGuest, pick, attempts, cards } from "./engines.mjs";

let server;
before(async () => { server = await startServer("file-changed"); });
after(async () => { await server?.stop(); });

/** Every file under `dir` (relative paths). */
function filesUnder(dir, prefix = "") {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]);
}

/** Everything in object store `store` of the page's IndexedDB: its values, or with `keys` its keys. */
function idbAll(page, store, keys = false) {
  return page.evaluate((store, keys) => new Promise((resolve, reject) => {
    const request = indexedDB.open("upload-once");
    request.onsuccess = () => {
      const db = request.result;
      const objects = db.transaction(store).objectStore(store);
      const get = keys ? objects.getAllKeys() : objects.getAll();
      get.onsuccess = () => { db.close(); resolve(get.result); };
      get.onerror = () => { db.close(); reject(get.error); };
    };
    request.onerror = () => reject(request.error);
  }), store, keys);
}

/** Whether the page has joined the event (its session is stored in IndexedDB). */
const joined = async (page) => (await idbAll(page, "meta", true)).some((k) => String(k).startsWith("session:"));

/** Whether the page's IndexedDB record of its one attempt carries the SHA-256 taken at the pick. */
const recordHasHash = async (page) => {
  const records = await idbAll(page, "attempts");
  return records.length === 1 && typeof records[0].sha256 === "string";
};

for (const engine of ["chromium", "firefox", "webkit"]) {
  test(`${engine}: a photo changed on disk after it was picked is refused with file_changed, and nothing is stored`, { skip: skipUnless(engine) }, async () => {
    const ev = await createEvent(server, { moderation: "none" });
    const dir = mkdtempSync(join(tmpdir(), "upload-once-changed-"));
    const path = join(dir, "IMG_0042.png");
    const before = photo(42, 300_000);
    const edited = photo(43, 300_000);
    assert.equal(before.length, edited.length, "the same size");
    writeFileSync(path, before);
    const objectsBefore = filesUnder(join(server.dataDir, "objects"));

    const page = await openEngine(engine);
    try {
      await openGuest(page, guestUrl(server, ev));
      // The guest joined in the background; the session is what the
      // attempt will be authorized under once the server is back.
      await until("the page to join the event", () => joined(page), 20_000, 50);
      await server.down();
      await pick(page, [path]);
      await until("the pick to be recorded with its SHA-256", () => recordHasHash(page), 20_000, 50);
      const [waiting] = await attempts(page);
      assert.notEqual(waiting.transfer, "uploaded", "nothing sent yet");
      assert.equal(waiting.confirmation, "unconfirmed");

      // An editor saves over the photo: other bytes, same size, a later time.
      writeFileSync(path, edited);
      const later = new Date(statSync(path).mtimeMs + 10_000);
      utimesSync(path, later, later);
      await server.up();

      const [refused] = await until("the attempt to be refused", async () => {
        const list = await attempts(page);
        return list.length === 1 && list[0].terminal && list;
      }, 90_000, 200);
      assert.equal(refused.transfer, "failed");
      assert.equal(refused.confirmation, "unconfirmed");
      assert.equal(refused.error?.code, "file_changed", `refused as ${JSON.stringify(refused.error)}`);
      await until("the card to say the file changed and offer no Retry", () => page.evaluate(() => {
        const card = document.querySelector("[data-testid='card']");
        return !!card && /changed on your device/.test(card.textContent) && !card.querySelector("[data-testid='retry']");
      }), 10_000, 100);
      assert.equal((await cards(page)).length, 1);

      const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/media`, { headers: { authorization: `Bearer ${ev.host_token}` } });
      assert.equal(res.status, 200);
      assert.deepEqual((await res.json()).media, [], "no media");
      const objectsAfter = filesUnder(join(server.dataDir, "objects"));
      assert.deepEqual(objectsAfter, objectsBefore, "no object (and no temporary file) left in the store");
    } finally {
      if (server.child.exitCode !== null) await server.up();
      await page.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
