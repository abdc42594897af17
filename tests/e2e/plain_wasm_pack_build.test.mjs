// A Rust developer builds the npm package with the standard command,
// `wasm-pack build --release --target web`, and nothing else: no xtask, no
// extra environment. That package must initialize and upload. (It keeps
// rustc's default features, reference types included; with Debian 12's
// wasm-opt, binaryen 108, `init` failed in `__wbindgen_init_externref_table`:
// `cargo xtask setup` installs binaryen's own, 116 or newer.)
//
// The guest page is served with this package instead of the one `cargo
// xtask` builds, and uploads one photo to a real server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ROOT, TARGET, startServer, createEvent, hostMedia, guestUrl, photos } from "./harness.mjs";
import { launch, pick, untilAllSaved, attempts } from "./pages.mjs";

/** Where the package goes, and the cargo target directory of its build. */
const PLAIN = join(TARGET, "plain-wasm-pack");
const PKG = join(PLAIN, "pkg");

/**
 * A developer's environment: what `cargo xtask` (or a `cargo run` around
 * it) sets for cargo is left out. The build gets a target directory of its
 * own only so that it does not rebuild, and make `cargo xtask` rebuild, the
 * size-tuned package's artifacts each time.
 */
function plainEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    const cargoSet = k.startsWith("CARGO_") && k !== "CARGO_HOME";
    if (cargoSet || ["CARGO", "RUSTFLAGS", "RUSTC_BOOTSTRAP", "RUSTDOCFLAGS"].includes(k)) continue;
    env[k] = v;
  }
  env.CARGO_TARGET_DIR = join(PLAIN, "target");
  return env;
}

function wasmPackBuild() {
  return new Promise((resolve, reject) => {
    const args = ["build", "--release", "--target", "web", "--out-dir", PKG];
    const child = spawn("wasm-pack", args, { cwd: ROOT, env: plainEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    child.stdout.on("data", (d) => { log += d; });
    child.stderr.on("data", (d) => { log += d; });
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(log) : reject(new Error(`wasm-pack ${args.join(" ")} failed (${code}):\n${log}`))));
  });
}

let server, browser, wasmOpt;
before(async () => {
  rmSync(PKG, { recursive: true, force: true });
  const log = await wasmPackBuild();
  wasmOpt = log.split("\n").find((l) => l.includes("wasm-opt at")) ?? "(wasm-opt not found)";
  server = await startServer("plain-wasm-pack", [], { pkgDir: PKG });
  browser = await launch();
}, { timeout: 30 * 60_000 });
after(async () => { await browser?.close(); await server?.stop(); });

test("a package built with plain `wasm-pack build --release --target web` initializes and uploads", async () => {
  // The page gets this package, not pkg/.
  const served = Buffer.from(await (await fetch(`${server.base}/pkg/upload_once_bg.wasm`)).arrayBuffer());
  assert.ok(served.equals(readFileSync(join(PKG, "upload_once_bg.wasm"))), "the server serves the plain build");

  const ev = await createEvent(server);
  const context = await browser.newContext();
  const guest = await context.newPage();
  const errors = [];
  guest.on("pageerror", (e) => errors.push(e.message));
  guest.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await guest.goto(guestUrl(server, ev));
  // The page's start: init() and Uploader.open, or the error that stopped it.
  await guest.waitForSelector("body[data-ready='1'], body[data-error]", { timeout: 20_000 });
  assert.equal(await guest.getAttribute("body", "data-error"), null, `the guest page did not start (${wasmOpt.trim()}):\n${errors.join("\n")}`);
  await pick(guest, photos(1, 40_000));
  await untilAllSaved(guest, 1);
  const [a] = await attempts(guest);
  assert.equal(a.confirmation, "confirmed");
  const media = await hostMedia(server, ev);
  assert.deepEqual(media.map((m) => m.attempt_id), [a.id], "one photo stored, by this attempt");
  assert.deepEqual(errors, [], "no errors in the page");
  await context.close();
});
