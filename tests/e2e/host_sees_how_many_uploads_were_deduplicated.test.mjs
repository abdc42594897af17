// The host page says how many uploads were a photo already in the event
// (the default dedup scope, `event`): not stored again, so not in its list.
// Two guests on two devices (browser profiles) share the same two photos;
// the second guest's uploads are deduplicated, and the host reads "2 uploads
// were photos or videos already here", beside two items, not four. Before
// any duplicate, the line is not shown.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, hostUrl, photos, until } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved, attempts } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-dedup"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** The host page's line about deduplicated uploads (`null` while hidden). */
const dedupLine = (host) => host.$eval("[data-testid='deduplicated']", (el) => (el.hidden ? null : el.textContent.trim()));

test("the host sees how many uploads were a photo already here", async () => {
  const ev = await createEvent(server);
  const shared = photos(2, 60_000, "party");

  const first = await browser.newContext();
  const guestA = await openGuest(first, guestUrl(server, ev));
  await pick(guestA, shared);
  await untilAllSaved(guestA, 2);
  await first.close();

  const desk = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const host = await desk.newPage();
  await host.goto(hostUrl(server, ev));
  await until("2 pending items", async () => (await host.$$("[data-testid='pending-item']")).length === 2);
  assert.equal(await dedupLine(host), null, "no line before any duplicate");

  // A second device picks the same two photos: both already shared.
  const second = await browser.newContext();
  const guestB = await openGuest(second, guestUrl(server, ev));
  await pick(guestB, shared);
  await until("both of the second guest's attempts to point to the first guest's media", async () => {
    const list = await attempts(guestB);
    return list.length === 2 && list.every((a) => a.confirmation === "confirmed" && a.duplicateOf);
  });
  await second.close();

  // The host page reads the list again (its refresh; a reload does the same).
  await host.reload();
  await until("the host page to say 2 uploads were deduplicated", async () => {
    const line = await dedupLine(host);
    return line && /^2 uploads were photos or videos already here/.test(line) && line;
  });
  assert.equal((await host.$$("[data-testid='pending-item']")).length, 2, "still two items to moderate");
  assert.equal((await hostMedia(server, ev)).length, 2);
  await desk.close();
});
