// A guest uploads a large video (it goes up in parts) and reloads the page in
// the middle: the page comes back with one card for it, whose progress
// starts from the parts the server already holds, not from zero, and the
// video is stored once.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, guestUrl, until } from "./harness.mjs";
import { launch, openGuest, pick, attempts, cards } from "./pages.mjs";

const MIB = 1 << 20;
const SIZE = 48 * MIB;
const PART = 5 * MIB;
const PARTS = Math.ceil(SIZE / PART);

let server, browser;
before(async () => {
  // Files over 16 MiB go up in 5 MiB parts here, so the test stays light.
  server = await startServer("large-video", ["--multipart-threshold", "16MiB", "--part-size", "5MiB"]);
  browser = await launch();
});
after(async () => { await browser?.close(); await server?.stop(); });

/** A video's worth of bytes that differ from part to part. */
function video(size) {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4096) bytes.fill((i / 4096) % 251, i, Math.min(i + 4096, size));
  return bytes;
}

test("a large video reloaded mid-upload shows one card whose progress resumes", async () => {
  const ev = await createEvent(server, { maxFileBytes: 1 << 30 });
  const context = await browser.newContext();
  const page = await openGuest(context, guestUrl(server, ev));
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  // A slow uplink, so the reload lands with some parts stored and some not.
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 10, downloadThroughput: -1, uploadThroughput: 4 * MIB });
  await pick(page, [{ name: "first-dance.mp4", mimeType: "video/mp4", buffer: video(SIZE) }]);
  const [partway] = await until("a few parts to be stored", async () => {
    const list = await attempts(page);
    return list.length === 1 && list[0].partCount === PARTS && list[0].partsDone >= 3 && list[0].partsDone < list[0].partCount - 2 && list;
  }, 60_000, 50);
  const doneBefore = partway.partsDone;

  await page.reload();
  await page.waitForSelector("body[data-ready='1']");
  const [card] = await cards(page);
  const resumedAt = Number(await page.$eval("[data-testid='card'] [data-testid='progress']", (el) => el.getAttribute("aria-valuenow")));
  assert.ok(resumedAt >= Math.floor(((doneBefore - 3) * PART * 100) / SIZE), `the card resumes at ${resumedAt}% (${doneBefore} parts were stored), not at 0`);
  assert.equal((await cards(page)).length, 1, "one card");
  assert.equal(card.id, partway.id, "for the same attempt");
  await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  const [saved] = await until("the video to be saved", async () => {
    const list = await attempts(page);
    return list.length === 1 && list[0].confirmation === "confirmed" && list;
  }, 120_000, 100);
  assert.equal(saved.id, partway.id);
  assert.equal(saved.partsDone, saved.partCount);
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 1, "stored once");
  assert.equal(media[0].size, SIZE);
  assert.match(media[0].composite_sha256 ?? "", new RegExp(`^[0-9a-f]{64}-${PARTS}$`));
  await context.close();
});
