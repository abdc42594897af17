// axe-core, injected into the three pages in the states people see them
// in, finds no serious or critical violation (WCAG 2.x A/AA and best
// practices): the guest page with cards saved, uploading and cancelled,
// and offline; the host page with waiting items, its QR code and a reject
// form open, and asking for the guest code; the wall with photos, and empty.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { startServer, createEvent, hostMedia, hostUrl, photos, until } from "./harness.mjs";
import { launch, pick, cards, attempts, openGuestInNewContext, throttleUplink, openWallWithPhotos, openEmptyWall } from "./pages.mjs";

// Evaluated through the DevTools protocol rather than added as a <script>:
// the pages' Content-Security-Policy refuses inline scripts, and they are
// checked under it.
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let server, browser;
before(async () => { server = await startServer("axe"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** Runs axe on the page as it is; fails on serious or critical violations. */
async function assertNoSeriousViolations(page, state) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  assert.ok(result.passes.length > 10, `axe checked the ${state}`);
  const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  const report = serious.map((v) => `${v.id} (${v.impact}): ${v.help}\n    ${v.nodes.map((n) => n.target.join(" ")).join("\n    ")}`).join("\n  ");
  assert.deepEqual(serious.map((v) => v.id), [], `${state}:\n  ${report}`);
  return result;
}

test("guest, host and wall pages have no serious or critical axe violations", async () => {
  const ev = await createEvent(server);
  const { context, page: guest } = await openGuestInNewContext(browser, server, ev, { viewport: { width: 1280, height: 900 } });
  await assertNoSeriousViolations(guest, "guest page, empty");

  // One saved, then on a slow uplink one uploading and one cancelled.
  await pick(guest, photos(1, 60_000, "saved"));
  await until("the first photo to be saved", async () => (await cards(guest)).some((c) => c.confirmation === "Saved"), 30_000);
  const { unthrottle } = await throttleUplink(context, guest, 60_000);
  await pick(guest, photos(2, 700_000, "slow"));
  await until("both slow photos to be uploading", async () => (await attempts(guest)).filter((a) => a.transfer === "uploading").length === 2, 30_000, 50);
  await guest.click("[data-testid='card'][data-filename='slow-1.png'] [data-testid='cancel']");
  await guest.waitForSelector("[data-testid='card'][data-filename='slow-1.png'] [data-testid='retry']");
  const states = (await attempts(guest)).map((a) => a.transfer).sort();
  assert.deepEqual(states, ["failed", "uploaded", "uploading"], "saved, cancelled and uploading cards");
  await assertNoSeriousViolations(guest, "guest page with cards saved, uploading and cancelled");

  await context.setOffline(true);
  await guest.waitForSelector("[data-testid='offline-banner']", { state: "visible" });
  await assertNoSeriousViolations(guest, "guest page offline");
  await context.setOffline(false);
  await unthrottle();
  await until("the second slow photo to be saved", async () => (await hostMedia(server, ev)).length === 2, 30_000);

  // The host: waiting items, the guest link as a QR code, a reject form.
  const host = await context.newPage();
  await host.goto(hostUrl(server, ev, `&code=${ev.guest_code}`));
  await until("2 waiting items", async () => (await host.$$("[data-testid='pending-item']")).length === 2);
  await host.waitForSelector("[data-testid='qr'] svg");
  await assertNoSeriousViolations(host, "host page with waiting items and the QR code");
  await host.click("[data-testid='pending-item'] [data-testid='reject']");
  await host.waitForSelector("[data-testid='reject-reason']");
  await host.click("[data-testid='filter-all']");
  await assertNoSeriousViolations(host, "host page, all items, a reject form open");
  // A server too old to tell the host the guest code: the page asks for it.
  const asking = await context.newPage();
  await asking.route("**/invite", (route) => route.fulfill({ status: 404, contentType: "application/problem+json", body: JSON.stringify({ type: "urn:upload-once:route_not_found", title: "Not Found", status: 404, code: "route_not_found", retryable: false }) }));
  await asking.goto(hostUrl(server, ev));
  await asking.waitForSelector("[data-testid='guest-code-input']");
  await asking.fill("[data-testid='guest-code-input']", "not-the-code");
  await asking.click("[data-testid='guest-code-show']");
  await asking.waitForFunction(() => document.querySelector("[data-testid='guest-code-error']")?.textContent.includes("doesn't open"));
  await assertNoSeriousViolations(asking, "host page asking for the guest code, after a wrong one");

  // The wall, with photos and empty.
  for (const m of await hostMedia(server, ev)) {
    const res = await fetch(`${server.base}/v1/media/${m.id}/moderation`, {
      method: "POST",
      headers: { authorization: `Bearer ${ev.host_token}`, "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    assert.equal(res.status, 200);
  }
  const wall = await openWallWithPhotos(context, server, ev, 2);
  await assertNoSeriousViolations(wall, "wall with photos");
  const emptyWall = await openEmptyWall(context, server);
  await assertNoSeriousViolations(emptyWall, "empty wall");
  await context.close();
});
