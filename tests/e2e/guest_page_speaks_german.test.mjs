// A guest whose browser speaks German (a `de-DE` context): the page says
// `<html lang="de">`, every string comes from the German table (no English
// one shows), and numbers are German through Intl: the size limit and file
// sizes with a decimal comma ("2,5 MB"), the progress as "42 %".
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, createEvent, hostMedia, photo, until, ROOT } from "./harness.mjs";
import { launch, pick, cards, openGuestInNewContext, throttleUplink } from "./pages.mjs";

let server, browser;
before(async () => { server = await startServer("german"); browser = await launch(); });
after(async () => { await browser?.close(); await server?.stop(); });

async function table(lang) {
  const source = readFileSync(join(ROOT, "www/i18n", `${lang}.js`), "utf8");
  return (await import(`data:text/javascript;base64,${Buffer.from(source).toString("base64")}`)).default;
}

test("the guest page speaks German, with German numbers", async () => {
  const [en, de] = [await table("en"), await table("de")];
  const ev = await createEvent(server, { maxFileBytes: 2_500_000 });
  const { context, page } = await openGuestInNewContext(browser, server, ev, { locale: "de-DE" });
  assert.equal(await page.evaluate(() => navigator.language), "de-DE", "the browser speaks German");
  assert.equal(await page.getAttribute("html", "lang"), "de");
  assert.equal((await page.textContent("#pick-label")).trim(), "Fotos oder Videos auswählen");
  await until("the event's limit", async () => (await page.textContent("[data-testid='limits']")) === "bis zu 2,5 MB pro Datei", 10_000);
  assert.equal(await page.title(), `E2E ${ev.event.slug} · Teile deine Fotos`);

  // Too large: refused, in German, with both sizes formatted for German.
  const big = photo(3, 3_100_000, 320, 240);
  await pick(page, [{ name: "gross.png", mimeType: "image/png", buffer: big }]);
  const refusal = (await (await page.waitForSelector("[data-testid='refusal']")).textContent()).replace(/\s+/g, " ");
  const bigSize = `${(big.length / 1e6).toFixed(1).replace(".", ",")} MB`;
  assert.equal(bigSize, "3,1 MB");
  assert.ok(refusal.includes(`Konnte nicht hinzugefügt werden: sie ist ${bigSize} groß, mehr als die 2,5 MB, die diese Veranstaltung annimmt`), refusal);

  // A photo that fits, on a slow uplink: its progress reads "NN %".
  const { unthrottle } = await throttleUplink(context, page, 500_000);
  const fits = photo(4, 1_240_000, 320, 240);
  await pick(page, [{ name: "foto.png", mimeType: "image/png", buffer: fits }]);
  const uploading = await until("the progress in German", async () => {
    const [c] = await cards(page);
    return c && /^Wird hochgeladen: \d{1,3}\u00a0%$/.test(c.transfer) && c.transfer;
  }, 30_000, 50);
  assert.match(uploading, /\u00a0%$/, "a no-break space before the percent sign, as German writes it");
  await unthrottle();

  const [saved] = await until("the photo to be saved", async () => {
    const all = await cards(page);
    return all.length === 1 && all[0].confirmation === "Gespeichert" && all;
  }, 30_000, 100);
  assert.equal(saved.transfer, "Hochgeladen");
  assert.equal(saved.moderation, "Wartet auf die Freigabe der Gastgeber");
  const size = await page.textContent("[data-testid='card'] .size");
  assert.equal(size, `${(fits.length / 1e6).toFixed(1).replace(".", ",")} MB`, "the file size with a decimal comma");
  assert.equal(await page.textContent("[data-testid='uploads-title']"), "Deine Uploads · 1 von 1 gespeichert");
  assert.equal(await page.getAttribute("[data-testid='progress']", "aria-label"), "Upload-Fortschritt von foto.png");

  // No English string shows anywhere (those German writes the same aside).
  const shown = await page.evaluate(() => document.body.innerText);
  const english = Object.entries(en)
    .filter(([key, value]) => typeof value === "string" && !value.includes("{") && value !== de[key] && value.length >= 6)
    .map(([, value]) => value);
  assert.ok(english.length > 50);
  for (const text of english) assert.ok(!shown.includes(text), `English on the German page: "${text}"`);
  assert.equal((await hostMedia(server, ev)).length, 1);
  await context.close();
});
