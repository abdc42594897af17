// Chromium driven over its own DevTools pipe (`--remote-debugging-pipe`),
// without Playwright. Playwright keeps every page it drives visible (a page
// behind another tab still says `visible`), so what a hidden tab does can
// only be seen this way: a second tab opened with `Target.createTarget` in
// the same window hides the first, as a guest switching apps would.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CHROMIUM, CHROMIUM_ARGS, TARGET, photos, until } from "./harness.mjs";

/**
 * Starts Chromium with a fresh profile. `extraArgs` are added to the
 * harness's flags (e.g. the intensive throttling's grace period).
 * Resolves to `{ send(method, params, sessionId), close() }`.
 */
export async function startChromium(extraArgs = []) {
  mkdirSync(TARGET, { recursive: true });
  const profile = mkdtempSync(join(TARGET, "cdp-profile-"));
  const child = spawn(CHROMIUM, [...CHROMIUM_ARGS, "--remote-debugging-pipe", `--user-data-dir=${profile}`, ...extraArgs, "about:blank"],
    { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] });
  const [input, output] = [child.stdio[3], child.stdio[4]];
  let next = 1, pending = "";
  const waiting = new Map();
  output.on("data", (chunk) => {
    pending += chunk.toString("utf8");
    let end;
    while ((end = pending.indexOf("\0")) >= 0) {
      const message = JSON.parse(pending.slice(0, end));
      pending = pending.slice(end + 1);
      if (message.id && waiting.has(message.id)) {
        const { resolve, reject } = waiting.get(message.id);
        waiting.delete(message.id);
        if (message.error) reject(new Error(`${message.error.message} ${message.error.data ?? ""}`));
        else resolve(message.result);
      }
    }
  });
  const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    input.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
  });
  await until("Chromium's first tab", async () => (await send("Target.getTargets")).targetInfos.some((t) => t.type === "page"), 20_000);
  return {
    send,
    close: async () => {
      await send("Browser.close").catch(() => {});
      await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A new tab in the browser's window: `{ targetId, send, evaluate, close }`. */
export async function openTab(browser, url = "about:blank") {
  const { targetId } = await browser.send("Target.createTarget", { url, newWindow: false });
  const { sessionId } = await browser.send("Target.attachToTarget", { targetId, flatten: true });
  const send = (method, params) => browser.send(method, params, sessionId);
  const evaluate = async (expression) => {
    const r = await send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`${expression}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
  };
  return { targetId, send, evaluate, close: () => browser.send("Target.closeTarget", { targetId }) };
}

/** Hides `tab` behind a new blank tab; resolves to that tab's id (close it to show `tab` again). */
export async function hide(browser, tab) {
  const { targetId } = await browser.send("Target.createTarget", { url: "about:blank", newWindow: false });
  await until("the page to be hidden", async () => (await tab.evaluate("document.visibilityState")) === "hidden", 5_000);
  return targetId;
}

/** Picks files (paths on disk) in the page's `selector` file input. */
export async function pickFiles(tab, selector, files) {
  const { root } = await tab.send("DOM.getDocument", { depth: 0 });
  const { nodeId } = await tab.send("DOM.querySelector", { nodeId: root.nodeId, selector });
  await tab.send("DOM.setFileInputFiles", { nodeId, files });
}

/**
 * Opens `url` (a guest page) in a new tab and waits until it is ready.
 * `initScript` runs in the page before any of its own scripts.
 */
export async function openGuestTab(browser, url, { initScript } = {}) {
  const tab = await openTab(browser);
  await tab.send("Page.enable");
  if (initScript) await tab.send("Page.addScriptToEvaluateOnNewDocument", { source: initScript });
  await tab.send("Page.navigate", { url });
  await until("the guest page to be ready", () => tab.evaluate("document.body?.dataset.ready === '1'").catch(() => false), 30_000);
  return tab;
}

/** `photos(n, bytes, prefix)` written into `dir`; resolves to their paths (what `pickFiles` takes). */
export function photosOnDisk(dir, n, bytes, prefix) {
  return photos(n, bytes, prefix).map((p) => {
    const path = join(dir, p.name);
    writeFileSync(path, p.buffer);
    return path;
  });
}
