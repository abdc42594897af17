// A host approves several at once: ticks two of five waiting items (a click
// on one's box, `x` on another) and approves the selection (a per-item
// moderation call each), then approves all that still wait: one bulk
// request (POST /v1/events/{slug}/moderation/bulk), whatever their number;
// against a server without that route, the per-item calls again. The server
// holds all five approved, and the filter shows each state's items with
// the right counts (waiting, approved, rejected, all): each filter is read
// from the server when chosen (the page holds only what it shows).
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, hostUrl, photos, until } from "./harness.mjs";
import { launch, saveInNewContext } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-bulk"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

const shownIds = (host, testid = "pending-item") => host.$$eval(`[data-testid='${testid}'], [data-testid='media-item']`, (els) => els.map((e) => e.dataset.id));
const count = (host, state) => host.textContent(`#count-${state}`).then(Number);
/** Chooses a filter and waits until its list is read. */
async function choose(host, name) {
  await host.click(`[data-testid='filter-${name}']`);
  await host.waitForSelector("#grid:not([aria-busy])", { state: "attached" });
}

/** Five photos saved by a guest, one of them rejected through the API. */
async function fiveWaitingOneRejected() {
  const ev = await createEvent(server);
  const { context } = await saveInNewContext(browser, server, ev, photos(5, 30_000), { viewport: { width: 1280, height: 900 } });
  const [rejected] = await hostMedia(server, ev);
  const res = await fetch(`${server.base}/v1/media/${rejected.id}/moderation`, {
    method: "POST",
    headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
    body: JSON.stringify({ decision: "reject", reason: "test" }),
  });
  assert.equal(res.status, 200);
  return { ev, context, rejected };
}

/** Counts the page's moderation calls: per item (their ids) and bulk. */
function watchModeration(host) {
  const calls = { each: [], bulk: 0 };
  host.on("request", (r) => {
    const path = new URL(r.url()).pathname;
    if (r.method() !== "POST") return;
    if (/\/v1\/media\/[^/]+\/moderation$/.test(path)) calls.each.push(path.split("/")[3]);
    if (/\/v1\/events\/[^/]+\/moderation\/bulk$/.test(path)) calls.bulk += 1;
  });
  return calls;
}

test("select two and approve them, then approve all waiting; the filter follows", async () => {
  const { ev, context, rejected } = await fiveWaitingOneRejected();

  const host = await context.newPage();
  const calls = watchModeration(host);
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
  assert.deepEqual([...calls.each].sort(), [waiting[0], waiting[2]].sort(), "one moderation call per selected item");
  await host.waitForFunction(() => /^Approved 2 /.test(document.querySelector("[data-testid='status']").textContent));

  await host.click("[data-testid='approve-all-pending']");
  await until("nothing waiting", async () => (await shownIds(host)).length === 0, 10_000, 50);
  await host.waitForFunction(() => /^Approved 2 /.test(document.querySelector("[data-testid='status']").textContent));
  assert.equal(calls.bulk, 1, "all waiting: one bulk request");
  assert.equal(calls.each.length, 2, "and no per-item call");
  const media = await hostMedia(server, ev);
  assert.deepEqual(media.filter((m) => m.moderation === "approved").map((m) => m.id).sort(), [...waiting].sort());
  assert.deepEqual(media.filter((m) => m.moderation === "rejected").map((m) => m.id), [rejected.id]);

  // The filter: each state's items, and counts that add up.
  assert.deepEqual([await count(host, "pending"), await count(host, "approved"), await count(host, "rejected"), await count(host, "all")], [0, 4, 1, 5]);
  await choose(host, "approved");
  assert.equal(await host.getAttribute("[data-testid='filter-approved']", "aria-pressed"), "true");
  assert.equal(await host.getAttribute("[data-testid='filter-pending']", "aria-pressed"), "false");
  assert.deepEqual((await shownIds(host)).sort(), [...waiting].sort());
  await choose(host, "rejected");
  assert.deepEqual(await shownIds(host), [rejected.id]);
  assert.match(await host.textContent("[data-testid='media-item']"), /Reason: test/);
  await choose(host, "all");
  assert.deepEqual((await shownIds(host)).sort(), media.map((m) => m.id).sort());
  await choose(host, "pending");
  assert.equal(await host.isVisible("[data-testid='empty']"), true);
  assert.match(await host.textContent("[data-testid='empty']"), /Nothing is waiting/);
  await context.close();
});

test("against a server without the bulk approval, all waiting are approved one call each", async () => {
  const { ev, context, rejected } = await fiveWaitingOneRejected();
  const host = await context.newPage();
  const calls = watchModeration(host);
  // A server from before the bulk approval: no such route.
  await host.route("**/moderation/bulk", (route) => route.fulfill({
    status: 404,
    contentType: "application/problem+json",
    body: JSON.stringify({ type: "urn:upload-once:route_not_found", title: "Not Found", status: 404, code: "route_not_found", retryable: false }),
  }));
  await host.goto(hostUrl(server, ev));
  await until("4 waiting items", async () => (await host.$$("[data-testid='pending-item']")).length === 4, 20_000);
  const waiting = await shownIds(host);
  await host.click("[data-testid='approve-all-pending']");
  await until("nothing waiting", async () => (await shownIds(host)).length === 0, 10_000, 50);
  await host.waitForFunction(() => /^Approved 4 /.test(document.querySelector("[data-testid='status']").textContent));
  assert.equal(calls.bulk, 1, "the bulk route was asked first");
  assert.deepEqual([...calls.each].sort(), [...waiting].sort(), "then one call per waiting item");
  assert.deepEqual([await count(host, "pending"), await count(host, "approved"), await count(host, "rejected")], [0, 4, 1]);
  const media = await hostMedia(server, ev);
  assert.deepEqual(media.filter((m) => m.moderation === "approved").map((m) => m.id).sort(), [...waiting].sort());
  assert.deepEqual(media.filter((m) => m.moderation === "rejected").map((m) => m.id), [rejected.id]);
  await context.close();
});
