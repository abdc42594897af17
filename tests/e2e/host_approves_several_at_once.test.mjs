// A host approves several at once: ticks two of five waiting items (a click
// on one's box, `x` on another) and approves the selection, then approves
// all that still wait. Every approval is the per-item moderation call, the
// server holds all five approved, and the filter shows each state's items
// with the right counts (waiting, approved, rejected, all).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, hostUrl, photos, until } from "./harness.mjs";
import { launch, saveInNewContext } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-bulk"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

const shownIds = (host, testid = "pending-item") => host.$$eval(`[data-testid='${testid}'], [data-testid='media-item']`, (els) => els.map((e) => e.dataset.id));
const count = (host, state) => host.textContent(`#count-${state}`).then(Number);

test("select two and approve them, then approve all waiting; the filter follows", async () => {
  const ev = await createEvent(server);
  const { context, page: guest } = await saveInNewContext(browser, server, ev, photos(5, 30_000), { viewport: { width: 1280, height: 900 } });
  // One is rejected beforehand, through the API: the filter has all three states.
  const [rejected] = await hostMedia(server, ev);
  const res = await fetch(`${server.base}/v1/media/${rejected.id}/moderation`, {
    method: "POST",
    headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
    body: JSON.stringify({ decision: "reject", reason: "test" }),
  });
  assert.equal(res.status, 200);

  const host = await context.newPage();
  const moderationCalls = [];
  host.on("request", (r) => { if (r.method() === "POST" && /\/v1\/media\/[^/]+\/moderation$/.test(new URL(r.url()).pathname)) moderationCalls.push(new URL(r.url()).pathname.split("/")[3]); });
  await host.goto(hostUrl(server, ev));
  await until("4 waiting items", async () => (await host.$$("[data-testid='pending-item']")).length === 4, 20_000);
  assert.equal(await host.isDisabled("[data-testid='approve-selected']"), true, "nothing selected yet");
  assert.match(await host.textContent("[data-testid='approve-all-pending']"), /\(4\)/);

  const waiting = await shownIds(host);
  await host.click(`[data-testid='pending-item'][data-id='${waiting[0]}'] [data-testid='select']`);
  await host.focus(`[data-testid='pending-item'][data-id='${waiting[2]}']`);
  await host.keyboard.press("x");
  assert.match(await host.textContent("[data-testid='approve-selected']"), /\(2\)/);
  await host.click("[data-testid='approve-selected']");
  await until("the two selected to leave the waiting list", async () => (await shownIds(host)).length === 2, 10_000, 50);
  assert.deepEqual((await shownIds(host)).sort(), [waiting[1], waiting[3]].sort(), "the two not selected still wait");
  assert.deepEqual([...moderationCalls].sort(), [waiting[0], waiting[2]].sort(), "one moderation call per selected item");
  await host.waitForFunction(() => /^Approved 2 /.test(document.querySelector("[data-testid='status']").textContent));

  await host.click("[data-testid='approve-all-pending']");
  await until("nothing waiting", async () => (await shownIds(host)).length === 0, 10_000, 50);
  assert.equal(moderationCalls.length, 4, "one call per item, no more");
  const media = await hostMedia(server, ev);
  assert.deepEqual(media.filter((m) => m.moderation === "approved").map((m) => m.id).sort(), [...waiting].sort());
  assert.deepEqual(media.filter((m) => m.moderation === "rejected").map((m) => m.id), [rejected.id]);

  // The filter: each state's items, and counts that add up.
  assert.deepEqual([await count(host, "pending"), await count(host, "approved"), await count(host, "rejected"), await count(host, "all")], [0, 4, 1, 5]);
  await host.click("[data-testid='filter-approved']");
  assert.equal(await host.getAttribute("[data-testid='filter-approved']", "aria-pressed"), "true");
  assert.equal(await host.getAttribute("[data-testid='filter-pending']", "aria-pressed"), "false");
  assert.deepEqual((await shownIds(host)).sort(), [...waiting].sort());
  await host.click("[data-testid='filter-rejected']");
  assert.deepEqual(await shownIds(host), [rejected.id]);
  assert.match(await host.textContent("[data-testid='media-item']"), /Reason: test/);
  await host.click("[data-testid='filter-all']");
  assert.deepEqual((await shownIds(host)).sort(), media.map((m) => m.id).sort());
  await host.click("[data-testid='filter-pending']");
  assert.equal(await host.isVisible("[data-testid='empty']"), true);
  assert.match(await host.textContent("[data-testid='empty']"), /Nothing is waiting/);
  await context.close();
});
