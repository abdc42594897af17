// The host removes the guest who shared a photo (the host page's "Remove
// this guest", POST /v1/events/{slug}/guests/{guest}/revoke): that guest's
// page shows it on the next file they pick, which is refused and never
// sent, while what they shared stays in the host's list. A guest of the same
// event in another browser goes on uploading.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, hostUrl, photos, until } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved, cards, saveInNewContext } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-removes"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("a guest the host removes sees it, and another guest goes on", async () => {
  const ev = await createEvent(server);
  const { context: phone, page: guest } = await saveInNewContext(browser, server, ev, photos(1, 40_000, "removed"));

  const desk = await browser.newContext();
  const host = await desk.newPage();
  host.on("dialog", (dialog) => dialog.accept());
  await host.goto(hostUrl(server, ev));
  await host.waitForSelector("[data-testid='pending-item']");
  const [id] = await host.$$eval("[data-testid='pending-item']", (els) => els.map((e) => e.dataset.id));
  await host.click(`[data-testid='pending-item'][data-id='${id}'] [data-testid='remove-guest']`);
  await until("the host page to say the guest is removed", async () =>
    /is removed/.test((await host.textContent("[data-testid='status']")) ?? ""), 10_000);

  // The removed guest's next file is refused, and the card says why.
  await pick(guest, photos(1, 40_000, "after"));
  const refused = await until("the new card to say the host removed the guest", async () => {
    const all = await cards(guest);
    const card = all.find((c) => c.filename.startsWith("after"));
    return card && /host of this event removed you/.test(card.error) && card;
  }, 20_000);
  assert.ok(refused);
  const listed = await hostMedia(server, ev);
  assert.deepEqual(listed.map((m) => m.id), [id], "what the guest shared stays; nothing more was stored");

  // Another guest of the event, in another browser, goes on.
  const other = await openGuest(await browser.newContext(), guestUrl(server, ev));
  await pick(other, photos(1, 40_000, "other"));
  await untilAllSaved(other, 1);
  assert.equal((await hostMedia(server, ev)).length, 2);
});
