// A guest with a keyboard only: Tab reaches the file picker first, with a
// visible focus ring; Space opens it; the cards' Cancel buttons come next in
// the Tab order, each with a visible ring; Enter on Cancel stops an upload
// and leaves the focus on that card's Retry; Enter on Retry sends it again;
// both photos end saved, once each.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startServer, createEvent, hostMedia, guestUrl, photos, until } from "./harness.mjs";
import { launch, untilAllSaved, attempts, throttleUplink } from "./pages.mjs";

const untilReady = (page) => page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });

let server, browser;
before(async () => { server = await startServer("guest-keyboard"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** What has the keyboard focus: its test id, and the card it is in. */
function focused(page) {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return "body";
    const card = el.closest("[data-testid='card']");
    return `${el.dataset.testid || el.tagName.toLowerCase()}${card && card !== el ? `@${card.dataset.filename}` : ""}`;
  });
}

/** The focus ring of what has the focus (the file input shows it on its big button). */
function focusRing(page) {
  return page.evaluate(() => {
    const el = document.activeElement;
    const shown = el.matches("input[type=file]") ? el.closest("label") : el;
    const style = getComputedStyle(shown);
    return { visible: el.matches(":focus-visible"), style: style.outlineStyle, width: parseFloat(style.outlineWidth) };
  });
}

function assertVisibleRing(ring, what) {
  assert.equal(ring.visible, true, `${what} matches :focus-visible`);
  assert.equal(ring.style, "solid", `${what} has an outline`);
  assert.ok(ring.width >= 2, `${what}'s outline is at least 2 px (${ring.width})`);
}

test("a guest picks, cancels, retries and uploads with the keyboard only", async () => {
  const ev = await createEvent(server);
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await context.newPage();
  // Listened for before the page loads: the browser then hands the chooser
  // to the test from the first key press on (listening only just before the
  // press loses that race now and then).
  const chooser = new Promise((resolve) => page.once("filechooser", resolve));
  await page.goto(guestUrl(server, ev));
  await untilReady(page);
  const idle = await page.evaluate(() => getComputedStyle(document.querySelector(".big-button")).outlineStyle);
  assert.equal(idle, "none", "no ring before the keyboard is used");

  // The picker is the first stop.
  await page.keyboard.press("Tab");
  assert.equal(await focused(page), "file-input");
  assertVisibleRing(await focusRing(page), "the file picker");

  // Space opens it; the chooser gets two photos. A slow uplink keeps them going.
  const { unthrottle } = await throttleUplink(context, page, 40_000);
  await page.keyboard.press("Space");
  const deadline = new AbortController();
  const opened = await Promise.race([chooser, sleep(10_000, null, { signal: deadline.signal }).catch(() => null)]);
  deadline.abort();
  assert.ok(opened, "Space on the focused picker opens the file chooser (within 10 s)");
  await opened.setFiles(photos(2, 400_000));
  await until("two cards, each with Cancel", async () => (await page.$$("[data-testid='card'] [data-testid='cancel']")).length === 2, 10_000, 50);

  // Tab order: the picker, then each card's Cancel and Pause, in the order
  // the cards show (top to bottom).
  const shown = await page.$$eval("[data-testid='card']", (els) => els.map((e) => e.dataset.filename));
  assert.deepEqual([...shown].sort(), ["photo-1.png", "photo-2.png"]);
  const order = [];
  for (let i = 0; i < 4; i++) {
    await page.keyboard.press("Tab");
    order.push(await focused(page));
    assertVisibleRing(await focusRing(page), order.at(-1));
  }
  assert.deepEqual(order, shown.flatMap((name) => [`cancel@${name}`, `pause@${name}`]));
  const name = shown[1];
  const card = `[data-testid='card'][data-filename='${name}']`;
  assert.match(await page.textContent(`${card} [data-testid='cancel']`), /Cancel.*the file won't be uploaded/);
  // Back to its Cancel.
  await page.keyboard.press("Shift+Tab");
  assert.equal(await focused(page), `cancel@${name}`);

  // Enter on its Cancel: it stops, and the focus stays on its card, on Retry.
  await page.keyboard.press("Enter");
  await until(`${name} to be cancelled`, async () => (await attempts(page)).some((a) => a.fileName === name && a.transfer === "failed" && a.error?.code === "cancelled"), 10_000, 50);
  await until(`the focus on ${name}'s Retry`, async () => (await focused(page)) === `retry@${name}`, 5_000, 50);
  assertVisibleRing(await focusRing(page), "Retry");
  assert.match(await page.textContent(`${card} [data-testid='retry']`), /Retry.*same upload/);
  await page.keyboard.press("Tab");
  assert.equal(await focused(page), `forget@${name}`, "Remove comes after Retry");
  await page.keyboard.press("Shift+Tab");

  // Enter on Retry: the same attempt goes again.
  const cancelled = (await attempts(page)).find((a) => a.fileName === name);
  await page.keyboard.press("Enter");
  await until(`${name} to go again`, async () => (await attempts(page)).some((a) => a.id === cancelled.id && a.transfer !== "failed"), 10_000, 50);
  await unthrottle();
  await untilAllSaved(page, 2);
  const media = await hostMedia(server, ev);
  assert.equal(media.length, 2);
  assert.ok(media.some((m) => m.attempt_id === cancelled.id), "the retried photo was saved under its own attempt");
  await context.close();
});
