// The guest removes one of their own saved photos from the guest page: it
// is withdrawn on the server (DELETE /v1/attempts/{id}), so it leaves the
// wall that shows it and the host's list, and its card leaves the page;
// the other photo stays everywhere. After a reload it does not come back.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, wallUrl, photos, until } from "./harness.mjs";
import { launch, openGuest, pick, untilAllSaved, cards } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("guest-removes"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

const wallIds = (wall) => wall.$$eval("[data-testid='wall-item']", (els) => els.map((e) => e.dataset.id).sort());

test("a photo the guest removes leaves the wall, the host's list and the page", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const context = await browser.newContext();
  const guest = await openGuest(context, guestUrl(server, ev));
  await pick(guest, photos(2, 50_000, "remove"));
  await untilAllSaved(guest, 2);
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 2);

  const wall = await context.newPage();
  await wall.goto(`${wallUrl(server, ev)}&resync_ms=1000`);
  await until("both photos on the wall", async () => (await wallIds(wall)).length === 2, 20_000);

  const [gone, kept] = await cards(guest);
  const goneMedia = media.find((m) => m.attempt_id === gone.id);
  assert.ok(goneMedia, "the host lists the photo the guest removes");
  await guest.click(`[data-testid='card'][data-id='${gone.id}'] [data-testid='forget']`);

  await until("its card to leave the guest page", async () => {
    const left = await cards(guest);
    return left.length === 1 && left[0].id === kept.id;
  }, 10_000);
  await until("the photo to leave the wall", async () => {
    const ids = await wallIds(wall);
    return ids.length === 1 && ids[0] !== goneMedia.id;
  }, 10_000);
  const listed = await hostMedia(server, ev);
  assert.deepEqual(listed.map((m) => m.attempt_id), [kept.id], "the host's list has only the other photo");

  await guest.reload();
  await guest.waitForSelector("body[data-ready='1']");
  assert.deepEqual((await cards(guest)).map((c) => c.id), [kept.id], "it does not come back after a reload");
  await context.close();
});
