// A guest link with a wrong code: the page does not wait for the server to
// become usable, and as soon as the server refuses the code the guest reads
// why, in the page; nothing is recorded or uploaded. The same holds for a
// link to an event that does not exist.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia } from "./harness.mjs";
import { launch } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("wrong-code"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

async function openWith(url) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const joins = [];
  page.on("response", (r) => { if (r.url().includes("/sessions")) joins.push(r.status()); });
  await page.goto(url);
  const message = await page.waitForSelector("[data-testid='message']", { timeout: 20_000 });
  return { context, page, joins, text: await message.textContent() };
}

test("a wrong guest code is explained in the page, and nothing is uploaded", async () => {
  const ev = await createEvent(server);
  const { context, page, joins, text } = await openWith(`${server.base}/?event=${ev.event.slug}&code=not-the-code`);
  assert.match(text, /doesn't open the event/);
  assert.equal(await page.evaluate(() => document.body.dataset.error), "wrong_guest_code");
  assert.deepEqual(joins, [403], "the server refused the code once");
  const refused = await page.evaluate(async () => {
    const [outcome] = await window.uploader.add([new File([new Uint8Array(100)], "a.png", { type: "image/png" })]);
    return { outcome, attempts: window.uploader.list().length, error: window.uploader.sessionError };
  });
  assert.equal(refused.outcome.ok, false);
  assert.equal(refused.outcome.error.code, "wrong_guest_code", "a file picked anyway is refused with the reason");
  assert.equal(refused.attempts, 0, "nothing recorded");
  assert.equal(refused.error.code, "wrong_guest_code");
  assert.equal((await hostMedia(server, ev)).length, 0);
  await context.close();
});

test("a link to an event that does not exist is explained in the page", async () => {
  const { context, page, text } = await openWith(`${server.base}/?event=no-such-event&code=whatever`);
  assert.match(text, /couldn't find this event/);
  assert.equal(await page.evaluate(() => document.body.dataset.error), "not_found");
  await context.close();
});
