// The pages' language: which table of strings they speak, and numbers,
// sizes and times formatted for the reader with `Intl`.
//
// - The language follows `navigator.languages` (the first one shipped
//   here), falls back to English, and `?lang=` overrides it. `<html lang>`
//   is set to it.
// - Each language is one table, `www/i18n/<lang>.js`: a flat object of
//   keys to strings. `{name}` in a string is filled from the parameters; a
//   number given as a parameter is formatted for the locale. A value that
//   is an object is a plural: `{one, other}` (and any other CLDR category),
//   chosen by the `count` parameter through `Intl.PluralRules`.
// - Static text in the HTML carries `data-i18n="key"` (its text) and
//   `data-i18n-attr="attr:key attr:key"` (attributes); `translatePage()`
//   fills them. The English in the HTML is only what shows before this runs.
//
// tests/e2e/translations_have_every_key.test.mjs checks that every table
// has every key of the English one, with the same parameters, and that
// every key the pages use exists.

import en from "./i18n/en.js";

/** The languages shipped, English first (the fallback). */
export const LANGUAGES = ["en", "de", "fr", "es"];

/** `{lang, locale}`: the table's language and the locale for `Intl`. */
function choose() {
  const wanted = [];
  const override = new URLSearchParams(location.search).get("lang");
  if (override && override.trim()) wanted.push(override.trim());
  wanted.push(...(navigator.languages || []), navigator.language || "");
  for (const tag of wanted) {
    const lang = String(tag).toLowerCase().split(/[-_]/)[0];
    if (!LANGUAGES.includes(lang)) continue;
    let locale = lang;
    try {
      // A regional variant keeps its own number and date formats (de-CH).
      locale = Intl.getCanonicalLocales(tag.replace("_", "-"))[0] || lang;
    } catch {
      // not a valid tag: the language alone
    }
    return { lang, locale };
  }
  return { lang: "en", locale: "en" };
}

/** The chosen language's table; English when it cannot be loaded. */
async function load({ lang, locale }) {
  if (lang === "en") return { lang, locale, table: en };
  try {
    return { lang, locale, table: (await import(`./i18n/${lang}.js`)).default };
  } catch (err) {
    console.warn(`the ${lang} strings could not be loaded; English instead`, err);
    return { lang: "en", locale: "en", table: en };
  }
}

const chosen = await load(choose());
/** The language of the strings shown ("en", "de", "fr", "es"). */
export const lang = chosen.lang;
/** The locale numbers, sizes and times are formatted for. */
export const locale = chosen.locale;
const table = chosen.table;
document.documentElement.lang = lang;

/**
 * `make()`, made on first use and kept: a page's first `Intl` formatter of
 * a kind loads its locale data, which costs a first visit on a slow phone
 * tens of milliseconds before its pick button works, for formats most pages
 * need later or never.
 */
function lazy(make) {
  let made;
  return () => (made ??= make());
}

const plurals = lazy(() => new Intl.PluralRules(locale));
const numbers = lazy(() => new Intl.NumberFormat(locale));

/**
 * The string `key` in the page's language, with `{name}` filled from
 * `params` (numbers formatted for the locale). A missing key falls back to
 * English, then to the key itself (so a typo shows, and a test finds it).
 */
export function t(key, params = {}) {
  let value = table[key] ?? en[key];
  if (value === undefined) return key;
  if (typeof value === "object") {
    const count = Number(params.count);
    value = value[plurals().select(count)] ?? value.other;
  }
  return value.replace(/\{(\w+)\}/g, (all, name) => {
    if (!(name in params)) return all;
    const v = params[name];
    return typeof v === "number" ? numbers().format(v) : String(v);
  });
}

/** Fills the `data-i18n` and `data-i18n-attr` elements under `root`. */
export function translatePage(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-attr]")) {
    for (const pair of el.dataset.i18nAttr.split(/\s+/).filter(Boolean)) {
      const [attr, key] = pair.split(":");
      el.setAttribute(attr, t(key));
    }
  }
}

// ------------------------------------------------------------ formats ----

const UNITS = ["byte", "kilobyte", "megabyte", "gigabyte", "terabyte"];
const byteFormats = new Map();

/** "2.4 MB", "2,4 MB", "512 bytes" (decimal units, as storage is sold). */
export function formatBytes(n) {
  if (!Number.isFinite(n) || n < 0) return "";
  let v = n;
  let i = 0;
  while (v >= 1000 && i < UNITS.length - 1) {
    v /= 1000;
    i += 1;
  }
  const digits = i > 0 && v < 10 ? 1 : 0;
  const key = `${i}|${digits}`;
  let format = byteFormats.get(key);
  if (!format) {
    format = new Intl.NumberFormat(locale, { style: "unit", unit: UNITS[i], unitDisplay: i === 0 ? "long" : "short", maximumFractionDigits: digits });
    byteFormats.set(key, format);
  }
  return format.format(v);
}

const percents = lazy(() => new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 0 }));

/** "42%", "42 %" (a whole percentage, 0 to 100). */
export function formatPercent(pct) {
  return percents().format(pct / 100);
}

/** A number for the locale: "1,234", "1.234". */
export function formatNumber(n) {
  return numbers().format(n);
}

const relative = lazy(() => new Intl.RelativeTimeFormat(locale, { numeric: "auto" }));
const dateTime = lazy(() => new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short" }));

/** "just now", "5 minutes ago", "vor 5 Minuten"; a date and time past a day. */
export function timeAgo(date) {
  const ms = typeof date === "number" ? date : Date.parse(date);
  if (!Number.isFinite(ms)) return "";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 45) return t("common.justNow");
  const m = Math.round(s / 60);
  if (m < 60) return relative().format(-m, "minute");
  const hr = Math.round(m / 60);
  if (hr < 24) return relative().format(-hr, "hour");
  return dateTime().format(ms);
}

/** "in 5 seconds", "in 5 Sekunden". */
export function inSeconds(s) {
  return relative().format(Math.max(0, Math.round(s)), "second");
}
