// The pages' language tables (www/i18n/<lang>.js): every language has every
// key of the English table with the same parameters and plural forms, no
// string is empty, every key the pages use exists, and every English key is
// used (except the wording waiting for the client's pause and resume).
// No browser: the tables are plain modules, read here as data.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./harness.mjs";

const WWW = join(ROOT, "www");
const LANGUAGES = ["en", "de", "fr", "es"];
/** Keys written ahead of the client's uploader.pause(id) / resume(id) (www/guest.js, "PAUSE/RESUME"). */
const WAITING = new Set(["guest.action.pause", "guest.action.pauseEffect", "guest.action.resume", "guest.action.resumeEffect"]);

async function table(lang) {
  const source = readFileSync(join(WWW, "i18n", `${lang}.js`), "utf8");
  return (await import(`data:text/javascript;base64,${Buffer.from(source).toString("base64")}`)).default;
}

/** The `{name}` parameters of a value (a string or a plural's forms). */
function paramsOf(value) {
  const texts = typeof value === "string" ? [value] : Object.values(value);
  return [...new Set(texts.flatMap((s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1])))].sort();
}

test("the pages ship English, German, French and Spanish, and i18n.js knows each", () => {
  const files = readdirSync(join(WWW, "i18n")).filter((f) => f.endsWith(".js")).map((f) => f.slice(0, -3)).sort();
  assert.deepEqual(files, [...LANGUAGES].sort());
  const i18n = readFileSync(join(WWW, "i18n.js"), "utf8");
  assert.match(i18n, /export const LANGUAGES = \["en", "de", "fr", "es"\]/);
});

test("every language has every English key, with the same parameters, and nothing more", async () => {
  const en = await table("en");
  assert.ok(Object.keys(en).length > 100, "the English table is the whole set of strings");
  for (const lang of LANGUAGES.slice(1)) {
    const other = await table(lang);
    assert.deepEqual(Object.keys(other).sort(), Object.keys(en).sort(), `${lang}.js has exactly the English keys`);
    for (const [key, value] of Object.entries(en)) {
      const translated = other[key];
      assert.equal(typeof translated, typeof value, `${lang} ${key}: a string where English has a string, a plural where it has a plural`);
      if (typeof value === "object") {
        assert.ok("one" in translated && "other" in translated, `${lang} ${key}: the plural has one and other`);
        assert.ok(paramsOf(value).includes("count"), `en ${key}: a plural is chosen by {count}`);
      }
      assert.deepEqual(paramsOf(translated), paramsOf(value), `${lang} ${key}: the same parameters`);
      const texts = typeof translated === "string" ? [translated] : Object.values(translated);
      for (const text of texts) assert.ok(text.trim().length > 0, `${lang} ${key} is not empty`);
    }
  }
});

test("every key the pages use exists, and every English key is used", async () => {
  const en = await table("en");
  const sources = ["guest.js", "host.js", "wall.js", "index.html", "host.html", "wall.html"].map((f) => readFileSync(join(WWW, f), "utf8")).join("\n");
  const used = new Set();
  const prefixes = new Set();
  // t("key"), t(cond ? "key" : "key"), data-i18n="key", data-i18n-attr="attr:key".
  for (const m of sources.matchAll(/"((?:common|guest|host|wall)\.[\w.]+)"/g)) if (!/\.(js|html)$/.test(m[1])) used.add(m[1]);
  for (const m of sources.matchAll(/data-i18n-attr="([^"]+)"/g)) for (const pair of m[1].split(/\s+/)) used.add(pair.split(":")[1]);
  // i18n.js's own formats use a few (its comments show the syntax, so only its calls count).
  for (const m of readFileSync(join(WWW, "i18n.js"), "utf8").matchAll(/\bt\("([\w.]+)"/g)) used.add(m[1]);
  // t(`guest.refuse.${code}`): some key under the prefix must exist.
  for (const m of sources.matchAll(/`((?:common|guest|host|wall)\.[\w.]*)\$\{/g)) prefixes.add(m[1]);
  for (const key of used) assert.ok(key in en, `the pages use "${key}", which en.js lacks`);
  for (const prefix of prefixes) assert.ok(Object.keys(en).some((k) => k.startsWith(prefix)), `no key under ${prefix}`);
  const unused = Object.keys(en).filter((k) => !used.has(k) && ![...prefixes].some((p) => k.startsWith(p)) && !WAITING.has(k));
  assert.deepEqual(unused, [], "English strings no page uses");
});
