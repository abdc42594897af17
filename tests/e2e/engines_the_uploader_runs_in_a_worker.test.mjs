// The uploader in a dedicated worker, driven from its page through the
// message API (`serveUploader` in the worker, examples/worker/'s
// RemoteUploader proxy in the page), in Chromium, Firefox and WebKit: the
// picked Files are posted to the worker, which records, sends and confirms
// them; the page loads no wasm; after a reload the worker's IndexedDB still
// has them; a call the uploader refuses answers its stable code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { ROOT, TARGET, startServer, createEvent, hostMedia, photos, serveStatic, until } from "./harness.mjs";
import { skipUnless, openEngine, pick, untilReady } from "./engines.mjs";

/** examples/worker and the built package, under one origin. */
async function serveExample() {
  mkdirSync(join(TARGET, "test-data"), { recursive: true });
  const dir = mkdtempSync(join(TARGET, "test-data", "worker-example-"));
  for (const f of ["index.html", "page.js", "worker.js", "remote-uploader.js"]) symlinkSync(join(ROOT, "examples/worker", f), join(dir, f));
  symlinkSync(join(ROOT, "pkg"), join(dir, "pkg"));
  return serveStatic(dir);
}

/** The attempts as the page's proxy holds them (from the worker's answers and events). */
const held = (page) => page.read(() => window.uploader.attempts.map((a) => ({ id: a.id, fileName: a.fileName, confirmation: a.confirmation })));

for (const engine of ["chromium", "firefox", "webkit"]) {
  test(`${engine}: the uploader runs in a worker, driven by its page`, { skip: skipUnless(engine) }, async () => {
    const site = await serveExample();
    const server = await startServer(`worker-${engine}`, ["--allowed-origin", site.origin]).catch(async (e) => { await site.close(); throw e; });
    let page;
    try {
      const ev = await createEvent(server, { moderation: "none" });
      page = await openEngine(engine);
      await page.goto(`${site.origin}/index.html?api=${encodeURIComponent(server.base)}&event=${ev.event.slug}&code=${ev.guest_code}`);
      await untilReady(page);

      await pick(page, photos(3, 50_000, `worker-${engine}`));
      await until(`3 outcomes in ${engine}`, () => page.read(() => window.outcomes.length === 3), 20_000, 100);
      assert.deepEqual(await page.read(() => window.outcomes.map((o) => o.status)), ["new", "new", "new"]);
      const confirmed = await until(`3 attempts confirmed in ${engine}`, async () => {
        const list = await held(page);
        return list.length === 3 && list.every((a) => a.confirmation === "confirmed") && list;
      }, 60_000, 200);
      assert.deepEqual(confirmed.map((a) => a.fileName).sort(), [1, 2, 3].map((i) => `worker-${engine}-${i}.png`));
      assert.equal((await hostMedia(server, ev)).length, 3, "each stored once");
      assert.equal(await page.read(() => performance.getEntriesByType("resource").some((e) => e.name.endsWith(".wasm"))), false,
        "the page itself loaded no wasm");

      // A call the uploader refuses: its stable code crosses back.
      const refused = await page.evaluate(() => window.uploader.retry("not-an-id").then(() => null, (e) => e.code));
      assert.equal(refused, "not_found");

      // A reload: a new worker opens the same IndexedDB and restores them.
      await page.reload();
      await untilReady(page);
      const restored = await held(page);
      assert.deepEqual(restored.map((a) => a.id).sort(), confirmed.map((a) => a.id).sort());
      assert.ok(restored.every((a) => a.confirmation === "confirmed"));
      assert.equal((await hostMedia(server, ev)).length, 3);
    } finally {
      await page?.close();
      await server.stop();
      await site.close();
    }
  });
}
