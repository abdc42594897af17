// A small W3C WebDriver client for WebKitGTK (WebKitWebDriver), which
// Playwright cannot drive. Needs an X display (the test command runs the
// suite under xvfb-run): without one the new-session request hangs with no
// error, so it has a time limit here.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ROOT, spawnOnFreePort, listensOn, until } from "./harness.mjs";

export const WEBKITWEBDRIVER = process.env.UPLOAD_ONCE_WEBKITWEBDRIVER ?? "/usr/bin/WebKitWebDriver";
/** The persistent-profile browser (tests/webkit/persistent-browser). */
export const WEBKIT_BROWSER = process.env.UPLOAD_ONCE_WEBKIT_BROWSER ?? join(ROOT, "tests/webkit/persistent-browser");

// WebKitWebDriver answers `500 unknown error "Could not parse script result"`
// when the string the browser handed back for an execute is not JSON
// (Session::executeScript in Source/WebDriver/Session.cpp,
// https://github.com/WebKit/WebKit/blob/main/Source/WebDriver/Session.cpp).
// With WebKitGTK 2.50 that string is not JSON in two cases only:
// - the page's web process went away (crashed, or was killed) while the
//   script ran: the cancelled IPC reply hands on two empty strings
//   (IPC::Connection::cancelReply), and an empty error type passes as a
//   success with an empty result (WebAutomationSession::evaluateJavaScriptFunction,
//   https://github.com/WebKit/WebKit/blob/main/Source/WebKit/UIProcess/Automation/WebAutomationSession.cpp).
//   The session goes with it: the next command answers 404 "session deleted
//   because of page crash or hang";
// - the script threw, or its promise rejected with, a string that is not
//   JSON: a thrown string is handed on as the result (evaluateJavaScriptCallback,
//   https://github.com/WebKit/WebKit/blob/main/Source/WebKit/WebProcess/Automation/WebAutomationSessionProxy.cpp).
// A busy page is not one of them: it only delays the answer (a 35 s loop in
// the page: the execute answered when it ended). Checked with 2.50.6.
const LOST_ANSWER = /Could not parse script result$/;
const READ_RETRIES = 3;

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
  const evaluate = (fn, ...args) => s("POST", "/execute/sync", { script: `return (${fn}).apply(null, arguments);`, args });
  const files = mkdtempSync(join(tmpdir(), "upload-once-webkit-files-"));
  return {
    name: persistent ? "webkit" : "webkit-private",
    version: session.capabilities?.browserVersion ?? "?",
    goto: (url) => s("POST", "/url", { url }),
    reload: () => s("POST", "/refresh", {}),
    /** Runs `fn(...args)` in the page (a promise is awaited) and answers its JSON value. */
    evaluate,
    /**
     * `evaluate` for a script without side effects (a poll): on WebKit's
     * "Could not parse script result" (see LOST_ANSWER) it asks again, at most
     * READ_RETRIES times. A page that is still there answers; a page whose web
     * process is gone ends in the driver's next error, which then says so and
     * carries the driver's and the browser's stderr. Every other error is
     * thrown as it is.
     */
    async read(fn, ...args) {
      for (let retry = 0; ; retry++) {
        try {
          return await evaluate(fn, ...args);
        } catch (e) {
          if (retry > 0 && !LOST_ANSWER.test(e.message)) {
            throw new Error(`WebKit lost the page's answer to a read (its web process crashed or was killed?), then: ${e.message}\n--- WebKitWebDriver and browser stderr (tail) ---\n${driver.log.slice(-4000)}`);
          }
          if (!LOST_ANSWER.test(e.message)) throw e;
          if (retry === READ_RETRIES) throw new Error(`${e.message} (${retry + 1} times in a row: does the script throw a string?)`);
          await sleep(250);
        }
      }
    },
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
