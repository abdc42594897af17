// The same photo from a second "device" (a second browser profile) is
// already shared: its attempt ends confirmed as that media, the card says
// so, and not one byte of it is PUT. A different photo with the same name
// and size is a photo of its own, stored again. In each engine, on an event
// with the default dedup scope (`event`).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, guestUrl, photo, until } from "./harness.mjs";
import { skipUnless, openEngine, openGuest, pick, attempts, cards, untilAllSaved } from "./engines.mjs";

let server;
before(async () => { server = await startServer("same-photo"); });
after(async () => { await server?.stop(); });

/** How many storage PUTs the server has answered (its request counter). */
async function storagePuts() {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  return text.split("\n")
    .filter((l) => l.startsWith("upload_once_http_requests_total{") && l.includes('method="PUT"'))
    .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
}

/** The host's list: the media and how many uploads were deduplicated. */
async function hostList(ev) {
  const res = await fetch(`${server.base}/v1/events/${ev.event.slug}/media`, { headers: { authorization: `Bearer ${ev.host_token}` } });
  assert.equal(res.status, 200);
  return res.json();
}

const NAME = "IMG_0001.png";

for (const engine of ["chromium", "firefox", "webkit"]) {
  test(`${engine}: the same photo from a second device is already shared and not sent; another photo of the same name and size is`, { skip: skipUnless(engine) }, async () => {
    const ev = await createEvent(server, { moderation: "none" });
    const first = photo(11, 300_000);
    const other = photo(12, 300_000);
    assert.equal(first.length, other.length, "the same size");
    assert.notDeepEqual(first, other, "different bytes");

    // The first device shares the photo.
    const a = await openEngine(engine);
    try {
      await openGuest(a, guestUrl(server, ev));
      await pick(a, [{ name: NAME, mimeType: "image/png", buffer: first }]);
      await untilAllSaved(a, 1);
    } finally {
      await a.close();
    }
    const stored = await hostList(ev);
    assert.equal(stored.media.length, 1);
    assert.equal(stored.deduplicated, 0);
    const putsBefore = await storagePuts();
    assert.ok(putsBefore >= 1, "the first device's PUT was counted");

    // The second device picks the same photo: nothing is sent.
    const b = await openEngine(engine);
    try {
      await openGuest(b, guestUrl(server, ev));
      await pick(b, [{ name: NAME, mimeType: "image/png", buffer: first }]);
      const [dup] = await until("the second device's attempt to end confirmed", async () => {
        const list = await attempts(b);
        return list.length === 1 && list[0].confirmation === "confirmed" && list;
      }, 30_000, 100);
      assert.equal(dup.duplicateOf, stored.media[0].id, "the attempt points to the media already stored");
      assert.equal(dup.error, null);
      await until("the card to say it was already shared", async () => {
        const [card] = await cards(b);
        return card && /Already shared/.test(card.transfer);
      }, 10_000, 100);
      assert.equal(await storagePuts(), putsBefore, "no PUT for a photo already shared");
      const after = await hostList(ev);
      assert.deepEqual(after.media.map((m) => m.id), [stored.media[0].id], "still one media");
      assert.equal(after.deduplicated, 1, "the host sees one upload deduplicated");
    } finally {
      await b.close();
    }

    // Same name, same size, other bytes (from a third device): a photo of
    // its own, sent and stored.
    const c = await openEngine(engine);
    try {
      await openGuest(c, guestUrl(server, ev));
      await pick(c, [{ name: NAME, mimeType: "image/png", buffer: other }]);
      await untilAllSaved(c, 1);
      const [own] = await attempts(c);
      assert.equal(own.duplicateOf, null);
      const both = await hostList(ev);
      assert.equal(both.media.length, 2, "a different photo is never merged");
      assert.equal(await storagePuts(), putsBefore + 1, "and it was sent, once");
    } finally {
      await c.close();
    }
  });
}
