// The host invites guests: the host link alone shows the guest link as an
// SVG QR code (the server tells the host page the guest code) that reads
// back (jsQR) as the guest link, which opens the guest page; printing shows
// the invitation card alone, its QR code reading back the same link
// (screenshot in target/e2e-screenshots/). Against a server too old to tell
// the code (its invite route answers 404), the page asks for it: a wrong
// code is refused, the pasted guest link is kept for the next visit.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { startServer, createEvent, guestUrl, hostUrl, screenshotPath } from "./harness.mjs";
import { launch } from "./pages.mjs";

// Evaluated through the DevTools protocol rather than added as a <script>,
// which the page's Content-Security-Policy refuses.
const JSQR = readFileSync(createRequire(import.meta.url).resolve("jsqr/dist/jsQR.js"), "utf8");

let server, browser;
before(async () => { server = await startServer("host-invite"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** Reads the QR code drawn by the SVG at `selector` (rendered into a canvas). */
async function readQr(page, selector) {
  if (!(await page.evaluate(() => typeof window.jsQR === "function"))) await page.evaluate(JSQR);
  return page.evaluate(async (sel) => {
    const svg = document.querySelector(sel);
    const img = new Image();
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(new XMLSerializer().serializeToString(svg))}`;
    await img.decode();
    const size = 480;
    const canvas = Object.assign(document.createElement("canvas"), { width: size, height: size });
    const ctx = canvas.getContext("2d");
    ctx.drawImage(img, 0, 0, size, size);
    const found = window.jsQR(ctx.getImageData(0, 0, size, size).data, size, size);
    return found ? found.data : null;
  }, selector);
}

test("the host link alone shows the guest link as a QR code, and a printable card", async () => {
  const ev = await createEvent(server);
  const link = guestUrl(server, ev);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const host = await context.newPage();
  await host.goto(hostUrl(server, ev));
  await host.waitForSelector("body[data-invite='shown'] [data-testid='qr'] svg");
  assert.equal(await host.$("[data-testid='guest-code-input']"), null, "nothing to paste");
  assert.equal(await host.$("[data-testid='change-code']"), null, "the server's code is the code");
  assert.equal(await host.textContent("[data-testid='guest-link']"), link);
  assert.equal(await host.getAttribute("[data-testid='qr'] svg", "aria-label"), "QR code of the guest link");
  assert.equal(await readQr(host, "[data-testid='qr'] svg"), link, "the QR code reads back as the guest link");

  // The link opens the guest page of this event.
  const guest = await context.newPage();
  await guest.goto(await readQr(host, "[data-testid='qr'] svg"));
  await guest.waitForSelector("body[data-ready='1']");
  await guest.waitForFunction((title) => document.getElementById("event-title").textContent === title, ev.event.title);

  // Printing: the card alone, with the QR code and the link.
  await host.emulateMedia({ media: "print" });
  assert.equal(await host.isVisible("[data-testid='print-card']"), true);
  assert.equal(await host.isVisible("#host"), false, "the moderation page is not printed");
  assert.equal(await host.textContent("#print-card-link"), link);
  assert.equal(await host.textContent("#print-card-event"), ev.event.slug);
  assert.equal(await readQr(host, "#print-card-qr svg"), link);
  await host.screenshot({ path: screenshotPath("host-print-card.png"), fullPage: true });
  await host.emulateMedia({ media: "screen" });
  assert.equal(await host.isVisible("[data-testid='print-card']"), false, "the card shows only in print");
  await context.close();
});

/** Answers the invite route as a server from before it would: 404 route_not_found. */
async function asAnOlderServer(page) {
  await page.route("**/invite", (route) => route.fulfill({
    status: 404,
    contentType: "application/problem+json",
    body: JSON.stringify({ type: "urn:upload-once:route_not_found", title: "Not Found", status: 404, code: "route_not_found", retryable: false }),
  }));
}

test("against an older server the host pastes the guest link once, checked and kept", async () => {
  const ev = await createEvent(server);
  const link = guestUrl(server, ev);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const host = await context.newPage();
  await asAnOlderServer(host);
  await host.goto(hostUrl(server, ev));
  await host.waitForSelector("body[data-invite='needs-code']");

  await host.fill("[data-testid='guest-code-input']", "not-the-code");
  await host.click("[data-testid='guest-code-show']");
  await host.waitForFunction(() => /doesn't open this event/.test(document.querySelector("[data-testid='guest-code-error']")?.textContent));
  assert.equal(await host.$("[data-testid='qr'] svg"), null, "no QR code for a wrong code");

  await host.fill("[data-testid='guest-code-input']", link);
  await host.click("[data-testid='guest-code-show']");
  await host.waitForSelector("body[data-invite='shown'] [data-testid='qr'] svg");
  assert.equal(await readQr(host, "[data-testid='qr'] svg"), link);

  // Next visit: the code is remembered (and checked again), no pasting.
  await host.reload();
  await host.waitForSelector("body[data-invite='shown'] [data-testid='qr'] svg");
  assert.equal(await readQr(host, "[data-testid='qr'] svg"), link);
  await context.close();
});
