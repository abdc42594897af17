// The guest removes one of their own saved photos from the guest page: it
// is withdrawn on the server (DELETE /v1/attempts/{id}), so it leaves the
// wall that shows it and the host's list, and its card leaves the page;
// the other photo stays everywhere. After a reload it does not come back.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, photos, until } from "./harness.mjs";
import { launch, cards, wallIds, uploadAndShowOnWall } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("guest-removes"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("a photo the guest removes leaves the wall, the host's list and the page", async () => {
  const ev = await createEvent(server, { moderation: "none" });
  const { context, guest, media, wall } = await uploadAndShowOnWall(browser, server, ev, photos(2, 50_000, "remove"));

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
