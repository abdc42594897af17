// The host page refreshes by what changed (issue 48): it reads each list
// once, then only asks what changed since (`since=`), and puts each change
// where it belongs in what it shows. Here the changes come from elsewhere
// (another host device, guests): an approval takes a photo out of the
// waiting list, a new upload joins its end (oldest first), a photo its guest
// withdraws leaves; in "all" (most recent first) a new upload comes first
// and a rejection changes its card in place. The counts follow each time.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { startServer, createEvent, hostUrl, photo, renditionsSettled, until } from "./harness.mjs";
import { launch } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-elsewhere"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

const json = { "content-type": "application/json" };

/** A guest's photo, saved through the API: its media id, and how to withdraw it. */
async function upload(ev, seed) {
  const { session_token: token } = await (await fetch(`${server.base}/v1/events/${ev.event.slug}/sessions`, {
    method: "POST", headers: json, body: JSON.stringify({ guest_code: ev.guest_code }),
  })).json();
  const auth = { ...json, authorization: `Bearer ${token}` };
  const bytes = photo(seed, 8_000, 32, 24);
  const attempt = randomUUID();
  const authorized = await (await fetch(`${server.base}/v1/events/${ev.event.slug}/attempts`, {
    method: "POST", headers: auth, body: JSON.stringify({ id: attempt, filename: `p${seed}.png`, size: bytes.length, content_type: "image/png" }),
  })).json();
  assert.equal((await fetch(authorized.upload.url, { method: "PUT", headers: authorized.upload.headers, body: bytes })).status, 200);
  const confirmed = await fetch(`${server.base}/v1/attempts/${attempt}/confirm`, {
    method: "POST", headers: { ...auth, "idempotency-key": attempt }, body: JSON.stringify({ size: bytes.length, content_type: "image/png" }),
  });
  assert.equal(confirmed.status, 200);
  const { id } = await confirmed.json();
  return {
    id,
    withdraw: async () => assert.ok((await fetch(`${server.base}/v1/attempts/${attempt}`, { method: "DELETE", headers: auth })).ok),
  };
}

/** A decision from another host device. */
async function decide(ev, id, decision) {
  const res = await fetch(`${server.base}/v1/media/${id}/moderation`, {
    method: "POST", headers: { ...json, authorization: `Bearer ${ev.host_token}` }, body: JSON.stringify({ decision }),
  });
  assert.equal(res.status, 200);
}

const shown = (host) => host.$$eval(".media-item", (els) => els.map((e) => e.dataset.id));
const counts = (host) => host.evaluate(() => ["pending", "approved", "rejected", "all"].map((s) => Number(document.getElementById(`count-${s}`).textContent)));
const untilShown = (host, what, ids) => until(what, async () => JSON.stringify(await shown(host)) === JSON.stringify(ids), 10_000, 50);

test("changes made elsewhere reach the host page where they belong, with no re-read of the list", async () => {
  const ev = await createEvent(server);
  const [a, b, c] = [await upload(ev, 1), await upload(ev, 2), await upload(ev, 3)];
  await renditionsSettled(server.base, ev);

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const host = await context.newPage();
  const reads = [];
  host.on("request", (r) => {
    const url = new URL(r.url());
    if (r.method() === "GET" && url.pathname.endsWith("/media")) reads.push(url.searchParams.has("since") ? "since" : url.searchParams.get("filter"));
  });
  await host.goto(hostUrl(server, ev, "&refresh_ms=500"));
  await untilShown(host, "the three waiting, oldest first", [a.id, b.id, c.id]);

  await decide(ev, b.id, "approve");
  await untilShown(host, "the approved one to leave the waiting list", [a.id, c.id]);
  assert.deepEqual(await counts(host), [2, 1, 0, 3]);

  const d = await upload(ev, 4);
  await untilShown(host, "the new upload at the end of the waiting list", [a.id, c.id, d.id]);
  assert.deepEqual(await counts(host), [3, 1, 0, 4]);

  await a.withdraw();
  await untilShown(host, "the withdrawn one to leave", [c.id, d.id]);
  assert.deepEqual(await counts(host), [2, 1, 0, 3]);

  await host.click("[data-testid='filter-all']");
  await untilShown(host, "all, most recent first", [d.id, c.id, b.id]);
  const e = await upload(ev, 5);
  await untilShown(host, "the new upload first", [e.id, d.id, c.id, b.id]);
  await decide(ev, c.id, "reject");
  await host.waitForFunction((id) => document.querySelector(`.media-item[data-id='${id}']`)?.dataset.moderation === "rejected", c.id);
  assert.deepEqual(await shown(host), [e.id, d.id, c.id, b.id], "changed in place");
  await until("the counts", async () => JSON.stringify(await counts(host)) === JSON.stringify([2, 1, 1, 4]), 10_000, 50);

  assert.deepEqual(reads.filter((r) => r !== "since"), ["pending", "all"], "each list read once; everything else asked what changed");
  assert.ok(reads.filter((r) => r === "since").length >= 5);
  await context.close();
});
