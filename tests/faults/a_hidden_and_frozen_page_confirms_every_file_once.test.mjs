// Issue 33: the guest picks ten photos and switches to another app. The
// guest page is hidden (another tab in front of it: tests/e2e/cdp.mjs, since
// Playwright keeps its pages visible), with Chromium's intensive timer
// throttling forced on, and answers are lost on the way: confirms answered
// and dropped, authorizes dropped before the server. Mid-way the page is
// frozen (`Page.setWebLifecycleState`, what Chromium does to a hidden tab
// to save power) and woken again. Every file ends confirmed, each stored
// once, and the page stayed hidden throughout.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { TARGET, createEvent } from "../e2e/harness.mjs";
import { hide, openGuestTab, photosOnDisk, pickFiles, startChromium } from "../e2e/cdp.mjs";
import { startStack, rowsByAttempt, until } from "./stack.mjs";

let stack, browser;
before(async () => {
  stack = await startStack("hidden");
  browser = await startChromium(["--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/1"]);
});
after(async () => { await browser?.close(); await stack?.stop(); });

test("a hidden page, frozen and woken mid-way, with answers lost, confirms every file once", async () => {
  await stack.proxy.reset();
  await stack.proxy.seed(33);
  const ev = await createEvent(stack.server, { moderation: "none" });
  await stack.proxy.rules(
    // At most four confirms' answers and two authorizes lost: each file
    // waits a backoff or two, never a dozen.
    { method: "POST", path: "/v1/attempts/*/confirm", probability: 0.4, times: 4, action: { kind: "drop_after" } },
    { method: "POST", path: "/v1/events/*/attempts", probability: 0.2, times: 2, action: { kind: "drop_before" } },
  );
  const dir = mkdtempSync(join(TARGET, "hidden-photos-"));
  const files = photosOnDisk(dir, 10, 150_000, "hidden");
  const tab = await openGuestTab(browser, stack.guestUrl(ev));
  try {
    await pickFiles(tab, "[data-testid='file-input']", files);
    const cover = await hide(browser, tab);

    // Frozen once the first confirm reached the server, woken 3 s later.
    await until("a first confirm", async () => (await stack.proxy.forwarded("POST", (p) => p.endsWith("/confirm"))).length > 0, 30_000, 20);
    await tab.send("Page.setWebLifecycleState", { state: "frozen" });
    await new Promise((r) => setTimeout(r, 3_000));
    await tab.send("Page.setWebLifecycleState", { state: "active" });

    const list = await until("every photo confirmed", async () => {
      const all = JSON.parse(await tab.evaluate("JSON.stringify(window.uploader.list().map((a) => [a.id, a.confirmation]))"));
      return all.length === 10 && all.every(([, c]) => c === "confirmed") && all;
    }, 120_000, 100);
    assert.equal(await tab.evaluate("document.visibilityState"), "hidden", "the page stayed hidden");

    const { requests } = await stack.proxy.log();
    assert.ok(requests.some((r) => r.fault?.includes("drop_after") && r.path.endsWith("/confirm")), "a confirm's answer was lost");
    const { media, rows } = await rowsByAttempt(stack.server, ev);
    assert.equal(media.length, 10, "ten media");
    for (const [id] of list) assert.equal(rows.get(id), 1, `attempt ${id} stored once`);
    await browser.send("Target.closeTarget", { targetId: cover });
  } finally {
    await tab.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});
