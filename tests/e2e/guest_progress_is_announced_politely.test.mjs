// Screen readers hear progress politely and at milestones only: one polite
// log region gets "started", each quarter passed (once, rising), "saved" or
// "not uploaded" with the reason, while the progress bar moves through many
// more values; no card text that changes with every percent sits in a live
// region.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, createEvent, photos, until } from "./harness.mjs";
import { launch, pick, attempts, openGuestInNewContext, throttleUplink } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("announce"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

test("progress is announced at milestones, politely, never on every percent", async () => {
  const ev = await createEvent(server);
  const { context, page } = await openGuestInNewContext(browser, server, ev);
  const region = await page.evaluate(() => {
    const el = document.querySelector("[data-testid='announcer']");
    return { role: el.getAttribute("role"), live: el.getAttribute("aria-live") };
  });
  assert.deepEqual(region, { role: "log", live: "polite" });

  // Everything said, and every value the progress bars took.
  await page.evaluate(() => {
    window.said = [];
    window.progress = {};
    new MutationObserver((records) => {
      for (const r of records) for (const n of r.addedNodes) window.said.push(n.textContent);
    }).observe(document.querySelector("[data-testid='announcer']"), { childList: true });
    new MutationObserver((records) => {
      for (const r of records) {
        const card = r.target.closest("[data-testid='card']");
        (window.progress[card.dataset.filename] ??= new Set()).add(r.target.getAttribute("aria-valuenow"));
      }
    }).observe(document.getElementById("cards"), { subtree: true, attributes: true, attributeFilter: ["aria-valuenow"] });
  });

  await throttleUplink(context, page, 250_000);
  await pick(page, photos(2, 900_000));
  await until("two cards", async () => (await page.$$("[data-testid='card']")).length === 2, 10_000, 50);
  const live = await page.evaluate(() => [...document.querySelectorAll("[data-testid='transfer']")].map((el) => !!el.closest("[aria-live]")));
  assert.deepEqual(live, [false, false], "the cards' changing text is not in a live region");

  // photo-2 is cancelled once under way; photo-1 goes to the end.
  await until("photo-2 to be under way", async () => (await attempts(page)).some((a) => a.fileName === "photo-2.png" && a.bytesSent > 0), 30_000, 50);
  await page.click("[data-testid='card'][data-filename='photo-2.png'] [data-testid='cancel']");
  await until("photo-1 to be saved", async () => (await attempts(page)).some((a) => a.fileName === "photo-1.png" && a.confirmation === "confirmed"), 60_000, 100);
  await page.waitForFunction(() => window.said.some((s) => s.startsWith("photo-1.png: saved")));

  const said = await page.evaluate(() => window.said);
  const progress = await page.evaluate(() => Object.fromEntries(Object.entries(window.progress).map(([k, v]) => [k, v.size])));
  const of = (name) => said.filter((s) => s.startsWith(`${name}: `)).map((s) => s.slice(name.length + 2));
  const one = of("photo-1.png");
  assert.equal(one[0], "upload started");
  assert.equal(one.at(-1), "saved");
  const quarters = one.slice(1, -1);
  assert.ok(quarters.length >= 2, `at least two quarters said on a slow uplink: ${JSON.stringify(one)}`);
  const pcts = quarters.map((q) => Number(/^(\d+)% uploaded$/.exec(q)?.[1]));
  assert.ok(pcts.every((p) => [25, 50, 75].includes(p)), `only quarters: ${JSON.stringify(quarters)}`);
  assert.deepEqual(pcts, [...new Set(pcts)].sort((a, b) => a - b), "each quarter once, rising");
  assert.ok(progress["photo-1.png"] >= 3 * one.length, `the bar took ${progress["photo-1.png"]} values, ${one.length} were said`);

  const two = of("photo-2.png");
  assert.equal(two[0], "upload started");
  assert.equal(two.at(-1), "not uploaded. You cancelled this upload: the file was not uploaded.");
  assert.equal(new Set(said).size, said.length, `nothing said twice: ${JSON.stringify(said)}`);
  await context.close();
});
