// The three browser engines behind one small page interface, so a flow is
// written once and run in each:
// - chromium: playwright-core driving Debian's Chromium (CDP);
// - firefox: playwright-core driving Firefox ESR over WebDriver BiDi
//   (channel "moz-firefox"; playwright-core is pinned to 1.64.1, which works
//   with it here, 1.65 does not);
// - webkit / webkit-private: WebKitGTK over plain W3C WebDriver
//   (webdriver.mjs), with a persistent profile as Safari's normal windows,
//   or the stock ephemeral one, which behaves like Safari's private browsing.
//
// Which engines run: UPLOAD_ONCE_E2E_ENGINES (comma-separated), set by
// `cargo xtask test e2e` to the engines installed here (all three on CI).
import { chromium, firefox } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS, until, startServer, createEvent } from "./harness.mjs";
import { startThrottle } from "./throttle.mjs";
import { startWebKit } from "./webdriver.mjs";

export const FIREFOX = process.env.UPLOAD_ONCE_FIREFOX ?? "/usr/bin/firefox-esr";
const enabled = new Set((process.env.UPLOAD_ONCE_E2E_ENGINES ?? "chromium").split(",").map((s) => s.trim()).filter(Boolean));

/** `false` when `engine` runs here, else the reason to skip (for node:test's `skip`). */
export function skipUnless(engine) {
  const family = engine.startsWith("webkit") ? "webkit" : engine;
  return enabled.has(family) ? false : `${family} is not installed here (UPLOAD_ONCE_E2E_ENGINES=${[...enabled].join(",")})`;
}

function playwrightPage(name, browser, context, page) {
  const evaluate = (fn, ...args) => page.evaluate(new Function("args", `return (${fn}).apply(null, args);`), args);
  return {
    name,
    version: browser.version(),
    canGoOffline: true,
    goto: (url) => page.goto(url),
    reload: () => page.reload(),
    evaluate,
    /** `evaluate` for a script without side effects (webdriver.mjs's `read`); here the same. */
    read: evaluate,
    setInputFiles: (selector, files) => page.setInputFiles(selector, files),
    setOffline: (offline) => context.setOffline(offline),
    screenshot: (path) => page.screenshot({ path, fullPage: true }),
    close: () => browser.close(),
  };
}

/** Starts `engine` with one fresh page (a fresh profile). */
export async function openEngine(engine) {
  switch (engine) {
    case "chromium": {
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      const context = await browser.newContext();
      return playwrightPage(engine, browser, context, await context.newPage());
    }
    case "firefox": {
      const browser = await firefox.launch({ channel: "moz-firefox", executablePath: FIREFOX, headless: true });
      const context = await browser.newContext();
      return playwrightPage(engine, browser, context, await context.newPage());
    }
    case "webkit":
    case "webkit-private": {
      const page = await startWebKit({ persistent: engine === "webkit" });
      // No network emulation over plain WebDriver.
      return { ...page, canGoOffline: false };
    }
    default:
      throw new Error(`unknown engine ${engine}`);
  }
}

// --- the guest page, through its data-testid hooks and window.uploader ---
// The polls below only read the page: they go through `page.read`, which
// may ask WebKit again when it lost an answer (see webdriver.mjs).

/** Opens the guest page and waits until it restored its attempts. */
export async function openGuest(page, url) {
  await page.goto(url);
  await untilReady(page);
}

export function untilReady(page) {
  return until("the guest page to be ready", () => page.read(() => document.body.dataset.ready === "1"), 20_000, 100);
}

/** The attempts as the uploader sees them (window.uploader.list()). */
export function attempts(page) {
  return page.read(() => window.uploader.list().map((a) => ({
    id: a.id, fileName: a.fileName, transfer: a.transfer, confirmation: a.confirmation,
    bytesSent: a.bytesSent, bytesTotal: a.bytesTotal, error: a.error, retries: a.retries, paused: a.paused, offline: a.offline, terminal: a.terminal, duplicateOf: a.duplicateOf,
  })));
}

/** Every card as the guest reads it. */
export function cards(page) {
  return page.read(() => [...document.querySelectorAll("[data-testid='card']")].map((el) => {
    const text = (id) => el.querySelector(`[data-testid='${id}']`)?.textContent?.trim() ?? "";
    return { id: el.dataset.id, transfer: text("transfer"), confirmation: text("confirmation") };
  }));
}

/** Whether the offline banner shows. */
export function offlineBanner(page) {
  return page.read(() => { const b = document.querySelector("[data-testid='offline-banner']"); return !!b && !b.hidden; });
}

/** Waits until there are `n` cards and every one shows "Saved". */
export async function untilAllSaved(page, n, ms = 90_000) {
  let last = [];
  try {
    return await until(`${n} cards to show "Saved" in ${page.name}`, async () => {
      const all = (last = await cards(page));
      return all.length === n && all.every((c) => /^Saved/.test(c.confirmation)) && all;
    }, ms, 200);
  } catch (e) {
    // What each card and attempt was left at, for a run that cannot be
    // watched (a CI machine).
    let seen = last.map((c) => `${c.transfer} / ${c.confirmation}`).join("; ");
    try {
      const list = await attempts(page);
      seen += ` | attempts: ${JSON.stringify(list.map((a) => [a.transfer, a.confirmation, a.error?.code ?? null, a.bytesSent, a.retries, a.offline]))}`;
    } catch (read) {
      seen += ` | attempts unread: ${read.message}`;
    }
    throw new Error(`${e.message}; the cards showed: ${seen}`);
  }
}

/** Picks files in the guest page's file input. */
export function pick(page, files) {
  return page.setInputFiles("[data-testid='file-input']", files);
}

/**
 * Starts the server `name` behind a throttling proxy (uplink `rate` bytes/s,
 * the server's --public-url is the proxy), creates an event and opens its
 * guest page through the proxy in `engine`. `close()` closes the page, the
 * proxy and the server; a failure part-way closes what was started.
 */
export async function openThrottledGuest(engine, name, rate) {
  const proxy = await startThrottle(null, { rate });
  const server = await startServer(name, ["--public-url", proxy.base]).catch(async (e) => { await proxy.close(); throw e; });
  proxy.setUpstream(server.port);
  let page;
  const close = async () => {
    await page?.close();
    await proxy.close();
    await server.stop();
  };
  try {
    const ev = await createEvent(server);
    page = await openEngine(engine);
    await openGuest(page, `${proxy.base}/?event=${ev.event.slug}&code=${ev.guest_code}`);
    return { proxy, server, ev, page, close };
  } catch (e) {
    await close();
    throw e;
  }
}
