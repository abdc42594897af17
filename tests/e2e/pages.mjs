// Helpers that read and drive the guest page through its data-testid hooks.
import { chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, until } from "./harness.mjs";

/** Launches headless Chromium. */
export function launch() {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** Opens the guest page and waits until it restored its attempts. */
export async function openGuest(context, url) {
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 20_000 });
  return page;
}

/** Every card's state, as the guest reads it. */
export function cards(page) {
  return page.$$eval("[data-testid='card']", (els) =>
    els.map((el) => {
      const text = (id) => el.querySelector(`[data-testid='${id}']`)?.textContent?.trim() ?? "";
      return {
        id: el.dataset.id,
        filename: el.dataset.filename,
        transfer: text("transfer"),
        confirmation: text("confirmation"),
        moderation: text("moderation"),
        error: text("error"),
      };
    }),
  );
}

/** The attempts as the uploader sees them (window.uploader.list()). */
export function attempts(page) {
  return page.evaluate(() => window.uploader.list());
}

/** Waits until there are `n` cards and every one shows "Saved". */
export async function untilAllSaved(page, n, ms = 60_000) {
  return until(`${n} cards to show "Saved"`, async () => {
    const all = await cards(page);
    return all.length === n && all.every((c) => /^Saved/.test(c.confirmation)) && all;
  }, ms, 200);
}

/** Picks files in the guest page's file input. */
export async function pick(page, files) {
  await page.setInputFiles("[data-testid='file-input']", files);
}
