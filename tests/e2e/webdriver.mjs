// A small W3C WebDriver client for WebKitGTK (WebKitWebDriver), which
// Playwright cannot drive. Needs an X display (the test command runs the
// suite under xvfb-run): without one the new-session request hangs with no
// error, so it has a time limit here.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, spawnOnFreePort, listensOn, until } from "./harness.mjs";

export const WEBKITWEBDRIVER = process.env.UPLOAD_ONCE_WEBKITWEBDRIVER ?? "/usr/bin/WebKitWebDriver";
/** The persistent-profile browser (tests/webkit/persistent-browser). */
export const WEBKIT_BROWSER = process.env.UPLOAD_ONCE_WEBKIT_BROWSER ?? join(ROOT, "tests/webkit/persistent-browser");

async function call(base, method, path, body, ms = 60_000) {
  const res = await fetch(base + path, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(ms),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) {
    const v = json.value ?? {};
    throw new Error(`WebDriver ${method} ${path}: ${res.status} ${v.error ?? ""} ${v.message ?? ""}`.trim());
  }
  return json.value;
}

/**
 * Starts WebKitWebDriver and a session. `persistent`: the browser keeps its
 * website data on disk, as Safari does; otherwise the stock ephemeral
 * profile, which behaves like Safari's private browsing.
 */
export async function startWebKit({ persistent = true } = {}) {
  // WebKitWebDriver says nothing once it listens (and "Unable to listen"
  // when its port was taken): it is ready when this very process holds a
  // socket listening on its port.
  const { child: driver, port } = await spawnOnFreePort("WebKitWebDriver", (port) => {
    const child = spawn(WEBKITWEBDRIVER, [`--port=${port}`], { stdio: ["ignore", "pipe", "pipe"] });
    child.log = "";
    child.stderr.on("data", (d) => { child.log += d; });
    child.stdout.resume();
    return child;
  }, (_out, port, child) => listensOn(child.pid, port));
  const base = `http://127.0.0.1:${port}`;
  await until("WebKitWebDriver to answer", async () => {
    try { await call(base, "GET", "/status", undefined, 1000); return true; } catch { return false; }
  }, 20_000, 50);
  const alwaysMatch = persistent ? { "webkitgtk:browserOptions": { binary: WEBKIT_BROWSER, args: ["--automation"] } } : {};
  let session;
  try {
    session = await call(base, "POST", "/session", { capabilities: { alwaysMatch } }, 30_000);
  } catch (e) {
    driver.kill("SIGTERM");
    throw new Error(`could not start a WebKit session (is there an X display?): ${e.message}\n${driver.log}`);
  }
  const id = session.sessionId;
  const s = (method, path, body, ms) => call(base, method, `/session/${id}${path}`, body, ms);
  const files = mkdtempSync(join(tmpdir(), "upload-once-webkit-files-"));
  return {
    name: persistent ? "webkit" : "webkit-private",
    version: session.capabilities?.browserVersion ?? "?",
    goto: (url) => s("POST", "/url", { url }),
    reload: () => s("POST", "/refresh", {}),
    /** Runs `fn(...args)` in the page (a promise is awaited) and answers its JSON value. */
    evaluate: (fn, ...args) => s("POST", "/execute/sync", { script: `return (${fn}).apply(null, arguments);`, args }),
    /** Picks files in a file input: real files on disk, as a person would (payloads, or paths). */
    async setInputFiles(selector, payloads) {
      // The same payload picked again is the same file on disk (same
      // name, size and modification time), as when a guest re-picks a photo.
      // A path is picked as it is (a test may change that file afterwards).
      const paths = payloads.map((f) => {
        if (typeof f === "string") return f;
        const dir = join(files, createHash("sha256").update(f.buffer).digest("hex").slice(0, 16));
        const path = join(dir, f.name);
        if (!existsSync(path)) {
          mkdirSync(dir, { recursive: true });
          writeFileSync(path, f.buffer);
        }
        return path;
      });
      const element = await s("POST", "/element", { using: "css selector", value: selector });
      const ref = element["element-6066-11e4-a52e-4f735466cecc"] ?? element.ELEMENT ?? Object.values(element)[0];
      await s("POST", `/element/${ref}/value`, { text: paths.join("\n") });
    },
    async screenshot(path) {
      writeFileSync(path, Buffer.from(await s("GET", "/screenshot"), "base64"));
    },
    async close() {
      try { await s("DELETE", "", undefined, 10_000); } catch { /* the browser may be gone already */ }
      // The browser inherits the driver's stderr: let go of the pipe, so a
      // browser slow to quit cannot keep this process alive.
      driver.stderr.destroy();
      driver.stdout.destroy();
      driver.kill("SIGTERM");
      rmSync(files, { recursive: true, force: true });
    },
  };
}
