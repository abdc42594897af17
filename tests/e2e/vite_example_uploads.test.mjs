// The Vite example app (the npm package built with --target bundler, as a
// web app would import it) uploads one file to the reference server.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, startServer, createEvent, hostMedia, photos, serveStatic } from "./harness.mjs";
import { launch } from "./pages.mjs";

let server, browser, site;
before(async () => {
  site = await serveStatic(join(ROOT, "examples/vite/dist"));
  server = await startServer("vite", ["--allowed-origin", site.origin]);
  browser = await launch();
});
after(async () => { await browser?.close(); await server?.stop(); await site?.close(); });

test("a file uploaded through the Vite app is saved", async () => {
  const ev = await createEvent(server);
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${site.origin}/?api=${encodeURIComponent(server.base)}&event=${ev.event.slug}&code=${ev.guest_code}`);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  await page.setInputFiles("[data-testid='file-input']", photos(1, 50_000, "vite"));
  await page.waitForSelector("li[data-testid='attempt'][data-confirmation='confirmed']", { timeout: 30_000 });
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 1);
  assert.equal(media[0].filename, "vite-1.png");
  assert.deepEqual(errors, []);
});
