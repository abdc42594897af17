// Renders www/icon.svg into the PNG icons the guest page's manifest and
// `apple-touch-icon` name (Android's launcher and iOS's home screen want
// PNGs), with the Chromium the tests use. Run it after changing the SVG:
//
//   node xtask/icons/make_icons.mjs
//
// The PNGs are committed; tests/e2e/guest_shares_photos_from_the_gallery
// checks that each one is served with the size its manifest entry says.
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "../../tests/e2e/node_modules/playwright-core/index.mjs";

const WWW = join(dirname(fileURLToPath(import.meta.url)), "../../www");
const svg = readFileSync(join(WWW, "icon.svg"), "utf8");
const browser = await chromium.launch({ executablePath: process.env.UPLOAD_ONCE_CHROMIUM ?? "/usr/bin/chromium", args: ["--headless=new", "--no-sandbox", "--disable-gpu"] });
try {
  for (const size of [180, 192, 512]) {
    const page = await browser.newPage({ viewport: { width: size, height: size }, deviceScaleFactor: 1 });
    // iOS rounds the home-screen icon's corners itself, and shows
    // transparent ones black: its icon (180) is square.
    const drawn = size === 180 ? svg.replace(/ rx="\d+"/, "") : svg;
    await page.setContent(`<html><body style="margin:0">${drawn.replace("<svg ", `<svg width="${size}" height="${size}" `)}</body></html>`);
    await page.screenshot({ path: join(WWW, `icon-${size}.png`), omitBackground: true });
    await page.close();
  }
} finally {
  await browser.close();
}
