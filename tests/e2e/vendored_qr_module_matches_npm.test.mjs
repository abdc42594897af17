// www/vendor/qrcode-generator.mjs is the npm package's ES module, unchanged,
// at the version tests/e2e/package.json pins; its licence sits beside it.
// Updating it: bump the pin, `npm install` here, copy
// node_modules/qrcode-generator/dist/qrcode.mjs over the vendored file, and
// change the version in www/vendor/qrcode-generator.LICENSE.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ROOT } from "./harness.mjs";

const PACKAGE = fileURLToPath(new URL("./node_modules/qrcode-generator/", import.meta.url));

test("the vendored QR code module is the pinned npm package's, byte for byte, with its licence", () => {
  const pinned = JSON.parse(readFileSync(new URL("./package.json", import.meta.url))).devDependencies["qrcode-generator"];
  const installed = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"));
  assert.equal(installed.version, pinned, "node_modules holds the pinned version (npm ci)");
  assert.equal(installed.license, "MIT");
  const npmFile = join(PACKAGE, "dist/qrcode.mjs");
  const vendored = readFileSync(join(ROOT, "www/vendor/qrcode-generator.mjs"));
  assert.ok(vendored.equals(readFileSync(npmFile)), "www/vendor/qrcode-generator.mjs differs from the npm package's dist/qrcode.mjs");
  const licence = readFileSync(join(ROOT, "www/vendor/qrcode-generator.LICENSE"), "utf8");
  assert.match(licence, new RegExp(`qrcode-generator ${pinned.replace(/\./g, "\\.")} \\(npm\\)`));
  assert.match(licence, /Copyright \(c\) 2009 Kazuhiko Arase/);
  assert.match(licence, /Permission is hereby granted, free of charge/);
});
