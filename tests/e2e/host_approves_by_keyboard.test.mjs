// A host with a keyboard only: the Tab order runs through the invitation,
// the filter, the bulk buttons, then each waiting item and its controls, in
// the order they show, every stop with a visible focus ring. On an item, `a`
// approves it and the focus goes to the item that took its place; j and k
// move; `r` opens the reject form with the focus in the reason, Enter
// rejects; Enter on a focused Approve button approves. The server holds
// each decision.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, hostMedia, hostUrl, photos, until } from "./harness.mjs";
import { launch, saveInNewContext } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("host-keyboard"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

/** What has the focus: its test id, with the file name of the item it is in. */
function focused(page) {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return "body";
    const item = el.closest(".media-item");
    const name = item ? item.querySelector("strong")?.textContent : null;
    return `${el.dataset.testid || el.tagName.toLowerCase()}${name ? `@${name}` : ""}`;
  });
}

function focusRing(page) {
  return page.evaluate(() => {
    const el = document.activeElement;
    const style = getComputedStyle(el);
    return { visible: el.matches(":focus-visible"), style: style.outlineStyle, width: parseFloat(style.outlineWidth) };
  });
}

async function moderation(ev) {
  return new Map((await hostMedia(server, ev)).map((m) => [m.filename, { moderation: m.moderation, reason: m.moderation_reason ?? null }]));
}

test("a host moves, approves and rejects with the keyboard only", async () => {
  const ev = await createEvent(server);
  const { context, page: guest } = await saveInNewContext(browser, server, ev, photos(3, 40_000), { viewport: { width: 1280, height: 900 } });

  const host = await context.newPage();
  await host.goto(hostUrl(server, ev, `&code=${ev.guest_code}`));
  await until("3 waiting items and the QR code", async () => (await host.$$("[data-testid='pending-item']")).length === 3 && (await host.$("[data-testid='qr'] svg")), 20_000);
  // Waiting items show oldest first; these came together, so read the order shown.
  const shown = await host.$$eval("[data-testid='pending-item'] strong", (els) => els.map((e) => e.textContent));
  assert.equal(shown.length, 3);

  const order = [];
  for (let i = 0; i < 12; i++) {
    await host.keyboard.press("Tab");
    order.push(await focused(host));
    const ring = await focusRing(host);
    assert.ok(ring.visible && ring.style === "solid" && ring.width >= 2, `${order.at(-1)} shows a focus ring: ${JSON.stringify(ring)}`);
  }
  assert.deepEqual(order, [
    "guest-link", "copy-link", "print-card-button",
    "filter-pending", "filter-approved", "filter-rejected", "filter-all",
    // "Approve selected" is disabled (nothing selected) and skipped.
    "approve-all-pending",
    `pending-item@${shown[0]}`, `select@${shown[0]}`, `approve@${shown[0]}`, `reject@${shown[0]}`,
  ]);

  // Back on the first item: `a` approves it; the focus goes to the next one.
  await host.keyboard.press("Shift+Tab");
  await host.keyboard.press("Shift+Tab");
  await host.keyboard.press("Shift+Tab");
  assert.equal(await focused(host), `pending-item@${shown[0]}`);
  await host.keyboard.press("a");
  await until("the first item to leave the waiting list", async () => (await host.$$("[data-testid='pending-item']")).length === 2, 10_000, 50);
  assert.equal(await focused(host), `pending-item@${shown[1]}`, "the focus is on the item that took its place");
  assert.equal((await moderation(ev)).get(shown[0]).moderation, "approved");

  // j and k move between items.
  await host.keyboard.press("j");
  assert.equal(await focused(host), `pending-item@${shown[2]}`);
  await host.keyboard.press("k");
  assert.equal(await focused(host), `pending-item@${shown[1]}`);

  // r: the reason gets the focus; Enter rejects with it.
  await host.keyboard.press("r");
  assert.equal(await focused(host), `reject-reason@${shown[1]}`);
  await host.keyboard.type("blurry");
  await host.keyboard.press("Enter");
  await until("the rejected item to leave the waiting list", async () => (await host.$$("[data-testid='pending-item']")).length === 1, 10_000, 50);
  assert.equal(await focused(host), `pending-item@${shown[2]}`);
  assert.deepEqual((await moderation(ev)).get(shown[1]), { moderation: "rejected", reason: "blurry" });

  // Tab to the last item's Approve, Enter: the list is empty and says so.
  await host.keyboard.press("Tab");
  await host.keyboard.press("Tab");
  assert.equal(await focused(host), `approve@${shown[2]}`);
  await host.keyboard.press("Enter");
  await until("nothing waiting", async () => (await host.$$("[data-testid='pending-item']")).length === 0, 10_000, 50);
  assert.equal(await focused(host), "empty", "the focus lands on the 'nothing is waiting' line");
  const states = await moderation(ev);
  assert.deepEqual([...states.values()].map((s) => s.moderation).sort(), ["approved", "approved", "rejected"]);
  assert.equal(states.get(shown[2]).moderation, "approved");
  await context.close();
});
