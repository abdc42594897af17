// The host page: approve or reject what guests uploaded, invite guests.
//
// - A filter by state (waiting, approved, rejected, all), with counts.
//   Waiting: oldest first (a queue); decided and all: most recent first.
// - Keyboard: every item is a focus stop; j/k or the arrows move between
//   items, `a` approves the focused one, `r` opens its reject form (Enter
//   rejects, Escape goes back), `x` (or Space on the item) selects it. After
//   a decision the focus goes to the item that took its place.
// - Several at once: "Approve selected" (the per-item moderation calls, a
//   few at a time) and "Approve all waiting": one request
//   (POST /v1/events/{slug}/moderation/bulk, up to what this page has seen,
//   its progress asked for every 500 ms); a server without that route gets
//   the per-item calls.
// - Other host tabs of the same event hear of every decision at once
//   (BroadcastChannel); every tab also asks every 5 s (`?refresh_ms=`, and
//   when it becomes visible) what changed since its last read, which covers
//   hosts on other devices.
// - The guest link as a QR code (SVG, from the vendored qrcode-generator)
//   and as a printable card (style.css, @media print). The guest code comes
//   from the server (GET /v1/events/{slug}/invite, with the host token). A
//   server too old for that answers 404: then the code comes from `&code=`
//   in the host link, or the host pastes the guest link or code once (kept
//   in this browser), checked against the wall endpoint, which answers
//   `wrong_guest_code` for a wrong one.
// - The originals, as one ZIP: every approved one, or every one (a link
//   the host token asks for, POST /v1/events/{slug}/archive).
// - Keeping the event safe: a new guest code, wall token or host link
//   (POST /v1/events/{slug}/rotate; the old one stops working at once, a
//   new host token goes into this page's fragment), and deleting the event
//   with everything in it (DELETE /v1/events/{slug}). Each asks first.
//
// At a festival's size (100,000 media in one event) the page costs what
// changed, not what exists:
//
// - The list. The page reads the filter shown a page at a time
//   (GET /v1/events/{slug}/media?filter=…&order=…&limit=…, then `cursor=`),
//   the next page only when the host scrolls near the end of what is read.
//   The counts and the deduplicated line come with every answer.
// - Refreshing. Every answer carries a change cursor (`changes`); the
//   refresh asks only for what changed since (`since=`): new uploads,
//   decisions here or elsewhere, withdrawals (`gone`), a preview made. Each
//   is applied to what is read: updated in place, dropped from a filter it
//   no longer matches, put where it belongs if that part of the list is read
//   (else the page that holds it brings it). Nothing changed: the answer is
//   a few bytes. A refresh that finds more than 1,500 changes (a bulk
//   approval elsewhere) reads the list's first page again instead.
// - The window. What is read stays as data (`list.ids`, `media`), but only
//   a window of it is cards in the DOM: `list.ids[winStart, winEnd)`, about
//   WINDOW cards, never more than WINDOW_MAX, whatever the event's size
//   (what is read stays: 10,000 records are a few MB). As the host
//   scrolls (or moves with j/k) near an end of the window, it takes STEP
//   more cards there, and cards far beyond the other end of the viewport
//   (TRIM px) leave the DOM, whole grid rows at a time so no card changes
//   column; the scroll position is held on a card in view, so nothing on
//   screen moves. Cards scrolled back to are made again from their data.
//   This is simpler and sturdier than a virtual list with measured spacers:
//   cards have different heights, and the browser lays out only real cards.

import { h, params, apiBase, showMessage, code, problemOf, isVideo, isImage, icon, ICONS } from "./common.js";
import { t, translatePage, formatBytes, timeAgo } from "./i18n.js";
import qrcode from "./vendor/qrcode-generator.mjs";

const FILTERS = ["pending", "approved", "rejected", "all"];
/** Moderation calls at once when approving the selected ones. */
const BULK_CONCURRENCY = 3;
/** Media in one page of the list. */
const PAGE = 100;
/** Changes in one answer of what changed. */
const CHANGES_PAGE = 500;
/** Answers of what changed one refresh reads before it reads the list again instead. */
const REFRESH_ROUNDS = 3;
/** Cards in the DOM the window keeps at least (while there are that many), and at most. */
const WINDOW = 120;
const WINDOW_MAX = 300;
/** Cards the window takes at a time at either end. */
const STEP = 48;
/** The window grows when its end is closer than this to the viewport (px)… */
const MARGIN = 1200;
/** …and lets go of cards farther than this from it. */
const TRIM = 3 * MARGIN;
/** How long a decision made here overrides what answers read meanwhile say (ms). */
const DECIDED_MS = 120_000;
/** How often a bulk approval's progress is asked for (ms). */
const BULK_POLL_MS = 500;

const app = document.getElementById("app");
const $ = (id) => document.getElementById(id);

let token = hostToken();
const p = params();
const event = p.get("event");
const api = apiBase(p);
const base = api.base;
const refreshMs = Math.max(1_000, Number(p.get("refresh_ms")) || 5_000);
const GUEST_CODE_KEY = `upload-once-host-guest-code:${event}`;

/**
 * The list the page shows: one filter's media, in its order, as far as
 * read (`next`: the cursor of the next page; null once the end is read).
 */
let list = { filter: "pending", ids: [], members: new Set(), next: null, loaded: false };
/** The record of every media in `list.ids`, by id. */
const media = new Map();
/** The window of `list.ids` shown as cards: [winStart, winEnd). */
let winStart = 0;
let winEnd = 0;
/** How many media each filter holds (the server's latest count, plus our decisions since). */
let counts = { pending: 0, approved: 0, rejected: 0, all: 0 };
/** How many uploads were a photo already here, and not stored again. */
let deduplicated = 0;
/** The change cursor: what the page has applied; a refresh asks what changed after it. */
let changes = null;
/** Bumped when the list is read again (another filter): older answers are dropped. */
let generation = 0;
/**
 * Decisions this page made or heard of from another tab, by media id, with
 * when (and the state before): an answer read before then does not undo them.
 */
const decided = new Map();
/** Rendered items, by id: { root, key, age, select }. */
const items = new Map();
/** Ids ticked for "Approve selected". */
const selected = new Set();
let filter = "pending";
let lastOk = 0;
/** The read under way, if any (one at a time of each kind). */
let opening = null;
let refreshing = null;
let paging = null;
let stopped = false;
let bulkRunning = false;
/** A `fill` is asked for on the next frame. */
let fillQueued = false;
/** When a page of the list last could not be read. */
let pageFailed = 0;
/** Other host tabs of this event, in this browser. */
const channel = event && "BroadcastChannel" in window ? new BroadcastChannel(`upload-once-host:${event}`) : null;

translatePage();
document.title = t("host.docTitle");

if (!event || !token) {
  const missing = [!event && "event", !token && "token"].filter(Boolean).join(", ");
  const [before, after] = t("common.looksLike").split("{link}");
  showMessage(
    app,
    t("host.missing.title"),
    t("host.missing.text", { missing }),
    h("span", {}, before, code(`${location.origin}/host.html?event=…#token=…`), after),
    t("host.missing.private"),
  );
  document.body.dataset.error = "missing_params";
} else if (api.refused) {
  showMessage(app, t("common.api.title"), t("common.api.text", { origin: api.refused }), t("common.api.ask"));
  document.body.dataset.error = "api_not_allowed";
} else {
  start();
}

/**
 * The host token, from the link's fragment (`host.html?event=…#token=…`):
 * a browser never sends the fragment, so the token stays out of the
 * server's and any proxy's logs and out of Referer headers. An older link's
 * `?token=` still works: it is moved into the fragment at once
 * (`history.replaceState`), so the address bar, a bookmark or a reload
 * carry it there from now on.
 */
function hostToken() {
  const url = new URL(location.href);
  const fragment = new URLSearchParams(url.hash.slice(1));
  const old = url.searchParams.get("token");
  if (old !== null) {
    url.searchParams.delete("token");
    if (!(fragment.get("token") || "").trim()) fragment.set("token", old);
    url.hash = fragment.toString();
    history.replaceState(history.state, "", url);
  }
  const value = fragment.get("token");
  return value && value.trim() ? value.trim() : null;
}

function start() {
  $("loading").remove();
  $("host").hidden = false;
  $("title").textContent = t("host.headingEvent", { event });
  document.title = t("host.docTitleEvent", { event });
  $("print-card-event").textContent = event;
  for (const button of document.querySelectorAll("[data-filter]")) {
    button.addEventListener("click", () => selectFilter(button.dataset.filter));
  }
  $("approve-selected").addEventListener("click", () => approveMany(selectedApprovable()));
  $("approve-all").addEventListener("click", approveAllWaiting);
  document.addEventListener("keydown", onKey);
  // Another host link pasted into this tab may change only the fragment: start again with its token.
  window.addEventListener("hashchange", () => {
    if (hostToken() !== token) location.reload();
  });
  if (channel) {
    channel.addEventListener("message", (e) => {
      const data = e.data || {};
      // Another tab approved many at once: what changed is asked for now.
      if (data.refresh) {
        refresh();
        return;
      }
      const m = data.media;
      if (!m || !m.id) return;
      heard(m);
      render();
    });
  }
  setUpInvite();
  for (const which of ["approved", "all"]) {
    $(`download-${which}`).addEventListener("click", () => download(which));
  }
  for (const what of ["guest_code", "wall_token", "host_token"]) {
    $(`rotate-${what}`).addEventListener("click", () => rotate(what));
  }
  $("delete-event").addEventListener("click", deleteEvent);
  // The window follows the scroll (and the size: a row holds more or fewer cards).
  window.addEventListener("scroll", queueFill, { passive: true });
  window.addEventListener("resize", queueFill);
  render();
  openList().then(() => {
    document.body.dataset.ready = "1";
  });
  setInterval(tick, refreshMs);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") tick();
  });
  setInterval(() => {
    if (lastOk && !bulkRunning) setStatus(updatedLine());
  }, 15_000);
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${token}`, Accept: "application/json", ...extra };
}

function updatedLine() {
  return t("host.status.updated", { ago: timeAgo(lastOk), seconds: Math.round(refreshMs / 1000) });
}

// ------------------------------------------------------------- reading ----

/** The order a filter shows: waiting oldest first (a queue), the others most recent first. */
function orderOf(name) {
  return name === "pending" ? "oldest" : "newest";
}

/** Whether a media belongs in a filter's list. */
function matches(name, m) {
  return name === "all" || m.moderation === name;
}

/** One read of the event's media list (`query`: filter, order, cursor or since, limit). */
async function readList(query) {
  const url = `${base}/v1/events/${encodeURIComponent(event)}/media?${new URLSearchParams(query)}`;
  const response = await fetch(url, { headers: headers(), cache: "no-store" });
  if (!response.ok) throw await problemOf(response);
  return response.json();
}

/** A read failed: a refused token or a gone event ends the page, anything else is said and tried again. */
function readFailed(err) {
  if (stopped) return;
  if (err && (err.status === 401 || err.status === 403 || err.status === 404)) {
    stopped = true;
    const what = err.status === 404 ? t("host.bad.notFound", { event }) : t("host.bad.token");
    showMessage(app, t("host.bad.title"), what, t("host.bad.details", { message: err.message }));
    document.body.dataset.error = err.code || "auth";
  } else {
    setStatus(t("host.status.unreachable", { message: err && err.message ? err.message : String(err) }), true);
  }
}

function readOk() {
  lastOk = Date.now();
  if (!bulkRunning) setStatus(updatedLine());
}

/** Every 5 s and when the tab shows again: what changed (or, before a first answer, the list). */
function tick() {
  if (stopped) return;
  if (!list.loaded) openList();
  else refresh();
}

/** The record an answer read from `started` on says, unless this page decided otherwise since. */
function latest(m, started) {
  const d = decided.get(m.id);
  return d && d.at >= started ? d.media : m;
}

/**
 * The counts and the deduplicated line of an answer read from `started`
 * on. Decisions made since may be missing from its counts: they are
 * counted again unless the answer holds the media as decided.
 */
function takeCounts(body, started) {
  if (body.deduplicated !== undefined && body.deduplicated !== null) deduplicated = Number(body.deduplicated) || 0;
  if (!body.counts) return;
  const next = {};
  for (const state of FILTERS) next[state] = Number(body.counts[state]) || 0;
  const told = new Map((body.media || []).map((m) => [m.id, m.moderation]));
  for (const d of decided.values()) {
    if (d.at < started || !d.from) continue;
    const was = told.get(d.media.id) ?? d.from;
    if (was !== d.media.moderation) {
      next[was] = Math.max(0, next[was] - 1);
      next[d.media.moderation] += 1;
    }
  }
  counts = next;
}

/**
 * Forgets decisions long past: every answer read since holds them (an
 * answer only ever looks at those made while it was read).
 */
function forgetDecided() {
  const before = Date.now() - DECIDED_MS;
  for (const [id, d] of decided) if (d.at < before) decided.delete(id);
}

/**
 * Reads the first page of the filter shown (at the start, and for another
 * filter). The cards shown stay until it is in: one in both lists (a reject
 * form open in it) is kept as it is.
 */
function openList() {
  if (opening && opening.filter === filter) return opening.done;
  const gen = ++generation;
  const name = filter;
  const started = Date.now();
  $("grid").setAttribute("aria-busy", "true");
  const done = (async () => {
    try {
      const body = await readList({ filter: name, order: orderOf(name), limit: String(PAGE) });
      if (gen !== generation) return;
      list = { filter: name, ids: [], members: new Set(), next: null, loaded: true };
      media.clear();
      changes = body.changes;
      takeCounts(body, started);
      addPage(body, started);
      forgetDecided();
      winStart = 0;
      winEnd = Math.min(list.ids.length, WINDOW);
      readOk();
      $("grid").removeAttribute("aria-busy");
      render();
      queueFill();
    } catch (err) {
      if (gen === generation) {
        $("grid").removeAttribute("aria-busy");
        readFailed(err);
      }
    } finally {
      if (opening && opening.gen === gen) opening = null;
    }
  })();
  opening = { filter: name, gen, done };
  return done;
}

/** Adds a page of the list (after what is read). */
function addPage(body, started) {
  for (const read of body.media || []) {
    const m = latest(read, started);
    if (!matches(list.filter, m)) continue;
    if (!list.members.has(m.id)) {
      list.ids.push(m.id);
      list.members.add(m.id);
    }
    media.set(m.id, m);
  }
  list.next = typeof body.next_cursor === "string" && body.next_cursor ? body.next_cursor : null;
}

/** Reads the list's next page; resolves once it is in (or could not be read). */
function loadMore() {
  if (paging) return paging;
  if (opening || !list.loaded || !list.next) return Promise.resolve();
  const gen = generation;
  const cursor = list.next;
  const name = list.filter;
  const started = Date.now();
  $("more").hidden = false;
  paging = (async () => {
    try {
      const body = await readList({ filter: name, order: orderOf(name), limit: String(PAGE), cursor });
      if (gen !== generation || list.next !== cursor) return;
      // Its counts only if nothing was decided meanwhile (a refresh brings them then).
      if (![...decided.values()].some((d) => d.at >= started)) takeCounts(body, started);
      addPage(body, started);
      readOk();
    } catch (err) {
      pageFailed = Date.now();
      readFailed(err);
    } finally {
      paging = null;
      $("more").hidden = true;
    }
  })();
  return paging;
}

/**
 * Asks what changed since the change cursor, and applies it; while more
 * changes wait, asks again. Thousands of them (a bulk approval elsewhere):
 * the list's first page is read again instead, which costs less.
 */
function refresh() {
  if (refreshing) return refreshing;
  // While a list is being read, its answer brings what changed.
  if (stopped || opening || !list.loaded || !changes) return Promise.resolve();
  const gen = generation;
  refreshing = (async () => {
    let again = false;
    try {
      for (let round = 0; ; round += 1) {
        if (round >= REFRESH_ROUNDS) {
          again = true;
          break;
        }
        const started = Date.now();
        const body = await readList({ since: changes, limit: String(CHANGES_PAGE) });
        if (gen !== generation) return;
        applyChanges(body, started);
        changes = body.changes;
        if (!body.more) break;
      }
      readOk();
    } catch (err) {
      readFailed(err);
    } finally {
      refreshing = null;
    }
    if (again) await openList();
  })();
  return refreshing;
}

/** Applies an answer of what changed, read from `started` on. */
function applyChanges(body, started) {
  const changed = (body.media || []).length + (body.gone || []).length;
  takeCounts(body, started);
  for (const id of body.gone || []) {
    drop(id);
    selected.delete(id);
  }
  for (const m of body.media || []) place(latest(m, started));
  forgetDecided();
  if (changed || body.counts) render();
  if (changed) queueFill();
}

/**
 * A decision made here or heard of from another tab: shown now, and
 * counted now when the page knows what the media was before.
 */
function heard(m, at = Date.now()) {
  const before = media.get(m.id);
  const from = before ? before.moderation : null;
  decided.set(m.id, { media: m, at, from });
  if (from && from !== m.moderation) {
    counts[from] = Math.max(0, counts[from] - 1);
    counts[m.moderation] += 1;
  }
  place(m);
}

/**
 * Puts a media's latest record into the list: updated in place, dropped
 * from a filter it no longer matches, or put where it belongs when that
 * part of the list is read (else the page that holds it brings it).
 */
function place(m) {
  const want = matches(list.filter, m);
  if (list.members.has(m.id)) {
    if (want) media.set(m.id, m);
    else drop(m.id);
    return;
  }
  if (!want || !list.loaded) return;
  const at = placeOf(m);
  if (at === list.ids.length && list.next) return;
  const wasEnd = winEnd === list.ids.length;
  list.ids.splice(at, 0, m.id);
  list.members.add(m.id);
  media.set(m.id, m);
  if (at < winStart) {
    winStart += 1;
    winEnd += 1;
  } else if (at < winEnd || (at === winEnd && wasEnd)) {
    winEnd += 1;
  }
}

/** Takes a media out of the list. */
function drop(id) {
  if (!list.members.has(id)) return;
  const at = list.ids.indexOf(id);
  list.ids.splice(at, 1);
  list.members.delete(id);
  media.delete(id);
  if (at < winStart) {
    winStart -= 1;
    winEnd -= 1;
  } else if (at < winEnd) {
    winEnd -= 1;
  }
}

/** The list's order: by upload time, then id (the server's), oldest or newest first. */
function compare(a, b) {
  const byTime = a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0;
  const order = byTime || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return orderOf(list.filter) === "oldest" ? order : -order;
}

/** Where a media goes in the list (binary search). */
function placeOf(m) {
  let lo = 0;
  let hi = list.ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compare(media.get(list.ids[mid]), m) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function setStatus(text, error = false) {
  const el = $("status");
  if (!el) return;
  el.textContent = text;
  el.classList.toggle("is-error", error);
}

function selectFilter(name) {
  if (!FILTERS.includes(name)) return;
  filter = name;
  for (const button of document.querySelectorAll("[data-filter]")) {
    button.setAttribute("aria-pressed", String(button.dataset.filter === name));
  }
  if (name !== list.filter || !list.loaded) openList();
}

/** Ticked items of the list that can still be approved. */
function selectedApprovable() {
  return [...selected].filter((id) => list.members.has(id) && media.get(id).moderation !== "approved");
}

// ------------------------------------------------------------ rendering ----

function itemsInOrder() {
  return [...$("grid").querySelectorAll(".media-item")];
}

/** Where the keyboard focus is among the items: `{id, index, onItem}`, or null. */
function focusContext() {
  const active = document.activeElement;
  const item = active && active.closest ? active.closest(".media-item") : null;
  if (!item) return null;
  return { id: item.dataset.id, index: itemsInOrder().indexOf(item), onItem: active === item };
}

/** Whether the focus was dropped (its element removed or disabled). */
function focusLost() {
  const active = document.activeElement;
  return !active || active === document.body || !active.isConnected;
}

/**
 * Shows the window of the list. `hint`: where the focus was before a
 * decision disabled its controls (a disabled control drops the focus).
 * `refocus`: a focused card that goes hands the focus to the one that
 * takes its place. The first card in view stays where it is on screen
 * (cards that come or go above it do not move what the host looks at):
 * where the browser's scroll anchoring did so already (Chromium, Firefox)
 * there is nothing left to do; elsewhere (Safari) the page scrolls by what
 * the card moved. Not at the top of the page, unless `hold` (the window
 * itself changed).
 */
function render(hint = null, { refocus = true, hold = false } = {}) {
  const held = hold || window.scrollY > 0 ? anchor() : null;
  for (const state of FILTERS) $(`count-${state}`).textContent = String(counts[state]);
  // Uploads of a photo already here (the event's dedup scope): not stored
  // again, so not in the list; said so the counts add up for the host.
  const dedup = $("deduplicated");
  dedup.hidden = deduplicated === 0;
  dedup.textContent = deduplicated ? t("host.deduplicated", { count: deduplicated }) : "";

  winStart = Math.max(0, Math.min(winStart, list.ids.length));
  winEnd = Math.max(winStart, Math.min(winEnd, list.ids.length));
  const shown = list.ids.slice(winStart, winEnd).map((id) => media.get(id));

  // Where the keyboard focus is, so that it stays on the same item or
  // goes to the one that takes its place.
  const context = refocus ? focusContext() || (hint && focusLost() ? hint : null) : null;

  const grid = $("grid");
  const keep = new Set(shown.map((m) => m.id));
  for (const [id, item] of items) {
    if (!keep.has(id)) {
      item.root.remove();
      items.delete(id);
    }
  }
  let previous = null;
  for (const m of shown) {
    let item = items.get(m.id);
    const key = itemKey(m);
    if (!item || item.key !== key) {
      const fresh = createItem(m);
      if (item) item.root.replaceWith(fresh.root);
      item = fresh;
      items.set(m.id, item);
    } else {
      item.age.textContent = t("host.item.uploaded", { ago: timeAgo(m.created_at) });
    }
    if (item.select) item.select.checked = selected.has(m.id);
    item.root.classList.toggle("is-selected", selected.has(m.id));
    // Keep the order without re-creating (previews would reload).
    const want = previous ? previous.nextSibling : grid.firstChild;
    if (want !== item.root) grid.insertBefore(item.root, want);
    previous = item.root;
  }
  for (const id of [...selected]) if (list.members.has(id) && media.get(id).moderation === "approved") selected.delete(id);

  const empty = $("empty");
  empty.textContent = t(`host.empty.${list.filter}`);
  empty.hidden = !list.loaded || list.ids.length > 0;
  updateBulk();
  if (held && held.el.isConnected) {
    const moved = held.el.getBoundingClientRect().top - held.top;
    if (moved) window.scrollBy(0, moved);
  }

  if (context && focusLost()) {
    const same = items.get(context.id);
    const order = itemsInOrder();
    const next = same ? same.root : order[Math.max(0, Math.min(context.index, order.length - 1))];
    if (next) {
      // The same item: back on its first control when the focus was in it.
      if (same && !context.onItem) (next.querySelector("button:not([disabled]), input:not([disabled])") || next).focus();
      else next.focus();
    } else {
      empty.focus();
    }
  }
  // Fewer cards (decided, gone): the window takes more.
  queueFill();
}

// --------------------------------------------------------------- window ----

/** How many cards a row of the grid holds. */
function columns() {
  const tracks = getComputedStyle($("grid")).gridTemplateColumns;
  return Math.max(1, tracks && tracks !== "none" ? tracks.split(" ").filter(Boolean).length : 1);
}

/** The first card in view and where it is, to hold the scroll position on. */
function anchor() {
  for (const el of itemsInOrder()) {
    const box = el.getBoundingClientRect();
    if (box.bottom > 0) return { el, top: box.top };
  }
  return null;
}

/**
 * Shows the window as it now is, the card in view staying where it was on
 * screen; then lets go of cards far outside the viewport (whole rows from
 * the top, any from the bottom) while the window holds more than WINDOW,
 * and down to WINDOW_MAX whatever their distance.
 */
function show() {
  render(null, { hold: true });
  const order = itemsInOrder();
  const cols = columns();
  const over = (limit) => Math.max(0, winEnd - winStart - limit);
  // From the top: the rows wholly far above the viewport. (A card with the
  // focus so far away was scrolled away from: it goes too, and j or k
  // start again from the first card.)
  let top = 0;
  while (top < order.length && order[top].getBoundingClientRect().bottom < -TRIM) top += 1;
  top = Math.min(top, over(WINDOW));
  // From the bottom: the cards wholly far below it.
  let bottom = 0;
  while (bottom < order.length && order[order.length - 1 - bottom].getBoundingClientRect().top > window.innerHeight + TRIM) bottom += 1;
  bottom = Math.min(bottom, over(WINDOW) - top);
  // Still too many (a huge screen): the side farther from the viewport goes.
  const extra = over(WINDOW_MAX) - top - bottom;
  if (extra > 0) {
    const above = order.length ? -order[0].getBoundingClientRect().top : 0;
    const below = order.length ? order[order.length - 1].getBoundingClientRect().bottom - window.innerHeight : 0;
    if (above > below) top += extra;
    else bottom += extra;
  }
  top -= top % cols;
  if (top > 0 || bottom > 0) {
    winStart += top;
    winEnd -= bottom;
    // A card with the focus that goes leaves it on the page, not on
    // another card far from the viewport.
    render(null, { refocus: false, hold: true });
  }
}

/** `fill` on the next frame (once, however many scroll events come). */
function queueFill() {
  if (fillQueued) return;
  fillQueued = true;
  requestAnimationFrame(() => {
    fillQueued = false;
    fill();
  });
}

/**
 * Grows the window where the viewport is near one of its ends: STEP more
 * cards there, read from the server first when the list ends there. Not
 * past WINDOW_MAX while the cards at the other end are too near to go (a
 * huge screen shows WINDOW_MAX cards, and the window moves on as the host
 * scrolls), nor a page again right after one could not be read.
 */
function fill() {
  if (!list.loaded || stopped) return;
  for (let round = 0; round < 8; round += 1) {
    const box = $("grid").getBoundingClientRect();
    const nearEnd = box.bottom - window.innerHeight < MARGIN;
    const nearStart = box.top > -MARGIN;
    const full = winEnd - winStart >= WINDOW_MAX;
    const cards = full ? itemsInOrder() : [];
    const roomAtEnd = !full || (cards.length > 0 && cards[0].getBoundingClientRect().bottom < -TRIM);
    const roomAtStart = !full || (cards.length > 0 && cards[cards.length - 1].getBoundingClientRect().top > window.innerHeight + TRIM);
    if (nearEnd && roomAtEnd && winEnd < list.ids.length) {
      winEnd = Math.min(list.ids.length, winEnd + STEP);
    } else if (nearEnd && roomAtEnd && list.next) {
      if (Date.now() - pageFailed > refreshMs) loadMore().then(queueFill);
      return;
    } else if (nearStart && roomAtStart && winStart > 0) {
      winStart = backTo(winStart - STEP);
    } else {
      return;
    }
    show();
  }
  // Still near an end after 8 steps (a tall screen): on with the next frame.
  queueFill();
}

/** A window start at `at` or before it that keeps every card in its column. */
function backTo(at) {
  if (at <= 0) return 0;
  const cols = columns();
  return Math.max(0, winStart - Math.ceil((winStart - at) / cols) * cols);
}

/**
 * One card further than the window (j/k at its end): grows it that way,
 * reading the next page first if need be. Resolves to whether it grew.
 */
async function extend(step) {
  if (step > 0) {
    if (winEnd >= list.ids.length && list.next) await loadMore();
    if (winEnd >= list.ids.length) return false;
    winEnd = Math.min(list.ids.length, winEnd + STEP);
  } else {
    if (winStart <= 0) return false;
    winStart = backTo(winStart - STEP);
  }
  show();
  return true;
}

function updateBulk() {
  const pending = counts.pending;
  const chosen = selectedApprovable().length;
  const some = $("approve-selected");
  some.textContent = t("host.bulk.selected", { count: chosen });
  some.disabled = bulkRunning || chosen === 0;
  const every = $("approve-all");
  every.textContent = t("host.bulk.allPending", { count: pending });
  every.disabled = bulkRunning || pending === 0;
}

// A card is made again when what it shows changes: its moderation, or its
// preview (made, or only a placeholder, since the last read).
function itemKey(m) {
  return `${m.moderation}|${m.moderation_reason || ""}|${m.preview}|${m.preview_reason || ""}`;
}

function preview(m) {
  if (m.preview === "pending") {
    // Not made yet: nothing is asked for (a request for it would wait for
    // the rendition, holding one of the browser's few connections to the
    // server, which the list's own reads need). The refresh that tells it
    // is made makes the card again, with it.
    return icon(isVideo(m.content_type) ? ICONS.video : ICONS.photo, 40);
  }
  if (isVideo(m.content_type) && m.preview !== "placeholder") {
    // The shareable copy, its poster (the thumbnail: one signature opens
    // every size) until it plays.
    const poster = m.url.replace("/display?", "/thumb?");
    const video = h("video", { controls: true, preload: "metadata", playsinline: true, src: m.url, poster, "aria-label": t("host.item.videoLabel", { name: m.filename }) });
    video.muted = true;
    return video;
  }
  if (isVideo(m.content_type)) {
    // A video that could not be made shareable: its poster where it got one
    // (one over the length limit), else the placeholder image.
    const poster = m.url.replace("/display?", "/thumb?");
    return h("img", { src: poster, alt: t("host.item.videoLabel", { name: m.filename }), loading: "lazy", decoding: "async" });
  }
  if (isImage(m.content_type)) {
    return h("img", { src: m.url, alt: t("host.item.photoAlt", { name: m.filename }), loading: "lazy", decoding: "async" });
  }
  return icon(ICONS.photo, 40);
}

function createItem(m) {
  const testid = m.moderation === "pending" ? "pending-item" : "media-item";
  const stateWord = t(`host.item.state.${m.moderation}`);
  const age = h("span", { text: t("host.item.uploaded", { ago: timeAgo(m.created_at) }) });
  const meta = h(
    "p",
    { class: "media-meta" },
    h("strong", { title: m.filename, text: m.filename }),
    h("span", { class: `badge badge--${m.moderation}`, "data-testid": "state", text: stateWord }),
    " ",
    `${formatBytes(m.size)} · `,
    age,
  );
  const info = h("div", { class: "media-info" }, meta);
  // Its preview (a video's poster and shareable copy, a photo's sizes) is
  // still being made; or could not be, and why.
  if (m.preview === "pending") {
    meta.insertBefore(h("span", { class: "badge badge--processing", "data-testid": "processing", text: t("host.item.processing") }), age.previousSibling);
  } else if (m.preview === "placeholder" && m.preview_reason) {
    info.append(h("p", { class: "media-meta", "data-testid": "preview-reason", text: t("host.item.previewReason", { reason: m.preview_reason }) }));
  }
  if (m.moderation === "rejected") {
    info.append(h("p", { class: "media-meta", text: m.moderation_reason ? t("host.item.reason", { reason: m.moderation_reason }) : t("host.item.noReason") }));
  }
  const actions = h("div", { class: "media-actions" });
  const approve = h("button", { class: "button button--primary", type: "button", "data-testid": "approve" }, t(m.moderation === "rejected" ? "host.item.approveAfterAll" : "host.item.approve"));
  const reject = h("button", { class: "button button--danger", type: "button", "data-testid": "reject" }, t(m.moderation === "approved" ? "host.item.takeOff" : "host.item.reject"));
  if (m.moderation !== "approved") actions.append(approve);
  if (m.moderation !== "rejected") actions.append(reject);
  if (actions.children.length === 1) actions.style.gridTemplateColumns = "1fr";
  info.append(actions);
  // The guest who uploaded it: removed, their session opens nothing more
  // and their uploads not yet saved end (what they shared stays here).
  const removeGuest = h("button", { class: "button button--quiet button--small", type: "button", "data-testid": "remove-guest" }, t("host.item.removeGuest"));
  removeGuest.addEventListener("click", () => revokeGuest(m, removeGuest));
  info.append(removeGuest);

  // A tick box for "Approve selected" on what can still be approved.
  let select = null;
  const previewBox = h("div", { class: "media-preview" }, preview(m));
  if (m.moderation !== "approved") {
    select = h("input", { type: "checkbox", class: "select-box", "data-testid": "select", "aria-label": t("host.item.select", { name: m.filename }) });
    select.addEventListener("change", () => toggleSelected(m.id, select.checked));
    previewBox.append(h("label", { class: "select" }, select));
  }

  const root = h(
    "li",
    {
      class: "media-item",
      tabindex: "0",
      "aria-label": `${m.filename} · ${stateWord}`,
      "data-testid": testid,
      dataset: { id: m.id, moderation: m.moderation },
    },
    previewBox,
    info,
  );
  const item = { root, age, select, key: itemKey(m), openReject: null };

  approve.addEventListener("click", () => decide(m.id, "approve", null, [approve, reject]));
  const openReject = () => {
    if (m.moderation === "rejected") return;
    const existing = root.querySelector(".reject-form input");
    if (existing) return existing.focus();
    actions.hidden = true;
    const inputId = `reason-${m.id}`;
    const input = h("input", {
      class: "text-input",
      id: inputId,
      type: "text",
      maxlength: "500",
      placeholder: t("host.reject.placeholder"),
      autocomplete: "off",
      "data-testid": "reject-reason",
    });
    const confirm = h("button", { class: "button button--danger", type: "submit", "data-testid": "reject-confirm" }, t(m.moderation === "approved" ? "host.reject.confirmTakeOff" : "host.reject.confirm"));
    const cancel = h("button", { class: "button", type: "button", "data-testid": "reject-cancel" }, t("host.reject.cancel"));
    const form = h(
      "form",
      { class: "reject-form" },
      h("label", { for: inputId, text: t("host.reject.label") }),
      input,
      h("div", { class: "media-actions" }, confirm, cancel),
    );
    const close = () => {
      form.remove();
      actions.hidden = false;
      root.focus();
    };
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      decide(m.id, "reject", input.value.trim() || null, [confirm, cancel, input]);
    });
    form.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        close();
      }
    });
    cancel.addEventListener("click", close);
    info.append(form);
    input.focus();
  };
  item.openReject = openReject;
  reject.addEventListener("click", openReject);
  return item;
}

function toggleSelected(id, on) {
  if (on) selected.add(id);
  else selected.delete(id);
  const item = items.get(id);
  if (item) {
    if (item.select) item.select.checked = on;
    item.root.classList.toggle("is-selected", on);
  }
  updateBulk();
}


// ------------------------------------------------------------ deciding ----

/** One moderation call; the updated record is shown here and in other tabs. */
async function postDecision(id, decision, reason = null) {
  const body = reason ? { decision, reason } : { decision };
  const response = await fetch(`${base}/v1/media/${encodeURIComponent(id)}/moderation`, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
  });
  if (!response.ok) throw await problemOf(response);
  const updated = await response.json();
  heard(updated);
  if (channel) channel.postMessage({ media: updated });
  return updated;
}

/** Removes the guest who uploaded `m` (POST /v1/events/{slug}/guests/{guest}/revoke). */
async function revokeGuest(m, button) {
  if (!window.confirm(t("host.guest.confirm", { name: m.filename }))) return;
  button.disabled = true;
  try {
    const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/guests/${encodeURIComponent(String(m.guest))}/revoke`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify({ block_address: false }),
    });
    if (!response.ok) throw await problemOf(response);
    const answer = await response.json();
    setStatus(t("host.status.guestRemoved", { name: m.filename, ended: answer.ended_uploads }));
  } catch (err) {
    button.disabled = false;
    setStatus(t("host.status.guestRemoveFailed", { message: err && err.message ? err.message : String(err) }), true);
  }
}

async function decide(id, decision, reason, controls) {
  const hint = focusContext();
  const focused = document.activeElement;
  for (const c of controls) c.disabled = true;
  try {
    const updated = await postDecision(id, decision, reason);
    setStatus(t(decision === "approve" ? "host.status.approved" : "host.status.rejected", { name: updated.filename }));
    render(hint);
  } catch (err) {
    for (const c of controls) c.disabled = false;
    if (focusLost() && focused && focused.isConnected) focused.focus();
    setStatus(t("host.status.decisionFailed", { message: err && err.message ? err.message : String(err) }), true);
  }
}


/** Approves several, a few calls at a time, saying how far it got. */
async function approveMany(ids) {
  if (bulkRunning || ids.length === 0) return;
  const pressed = document.activeElement;
  bulkRunning = true;
  updateBulk();
  const queue = [...ids];
  let done = 0;
  const failures = [];
  setStatus(t("host.status.bulkProgress", { done, total: ids.length }));
  const worker = async () => {
    while (queue.length) {
      const id = queue.shift();
      try {
        await postDecision(id, "approve");
        selected.delete(id);
      } catch (err) {
        failures.push(err);
      }
      done += 1;
      setStatus(t("host.status.bulkProgress", { done, total: ids.length }));
      render();
    }
  };
  await Promise.all(Array.from({ length: Math.min(BULK_CONCURRENCY, ids.length) }, worker));
  bulkEnded(pressed);
  const approved = ids.length - failures.length;
  if (failures.length) {
    const first = failures[0];
    setStatus(t("host.status.bulkFailed", { count: failures.length, message: first && first.message ? first.message : String(first) }), true);
  } else {
    setStatus(t("host.status.bulkDone", { count: approved }));
  }
}

/**
 * After several decisions: the buttons again, and the focus back on the
 * pressed button (disabled while it ran), or, when there is nothing left
 * for it to do, on the first item.
 */
function bulkEnded(pressed) {
  bulkRunning = false;
  render();
  queueFill();
  if (focusLost()) {
    if (pressed && pressed.isConnected && !pressed.disabled) pressed.focus();
    else (itemsInOrder()[0] || $("empty")).focus();
  }
}

/** A call of the bulk approval; the server's answer, or throws its problem. */
async function bulkCall(method, path, body) {
  const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/moderation/bulk${path}`, {
    method,
    headers: headers(body ? { "Content-Type": "application/json" } : {}),
    body: body ? JSON.stringify(body) : undefined,
    cache: "no-store",
  });
  if (!response.ok) throw await problemOf(response);
  return response.json();
}

/**
 * "Approve all waiting": one request for every media waiting as of what
 * this page has seen (its change cursor: one uploaded since, which the
 * host has not seen, waits), then its progress every 500 ms in the status
 * line. A server without the route (404 route_not_found) gets one call per
 * media, as before.
 */
async function approveAllWaiting() {
  if (bulkRunning || counts.pending === 0 || !changes) return;
  const pressed = document.activeElement;
  bulkRunning = true;
  updateBulk();
  setStatus(t("host.status.bulkProgress", { done: 0, total: counts.pending }));
  // Up to date first: a media changed since the last refresh (its preview
  // made) would otherwise be past `upto`, and wait.
  await refresh();
  let job;
  try {
    job = await bulkCall("POST", "", { decision: "approve", upto: changes });
  } catch (err) {
    if (err && (err.code === "route_not_found" || err.status === 405)) {
      bulkRunning = false;
      let ids;
      try {
        ids = await allPendingIds();
      } catch (listErr) {
        bulkEnded(pressed);
        setStatus(t("host.status.bulkError", { message: listErr && listErr.message ? listErr.message : String(listErr) }), true);
        return;
      }
      return approveMany(ids);
    }
    bulkEnded(pressed);
    setStatus(t("host.status.bulkError", { message: err && err.message ? err.message : String(err) }), true);
    return;
  }
  let misses = 0;
  while (job && job.state !== "done") {
    setStatus(t("host.status.bulkProgress", { done: Number(job.done) || 0, total: Number(job.total) || 0 }));
    await new Promise((resolve) => setTimeout(resolve, BULK_POLL_MS));
    try {
      job = await bulkCall("GET", `/${encodeURIComponent(job.id)}`);
      misses = 0;
    } catch (err) {
      // A few misses in a row (the connection): it runs on the server anyway.
      misses += 1;
      if (misses >= 10 || (err && err.status >= 400 && err.status < 500)) {
        bulkEnded(pressed);
        setStatus(t("host.status.bulkError", { message: err && err.message ? err.message : String(err) }), true);
        return;
      }
    }
  }
  // What it changed, here and in the other tabs.
  await refresh();
  await refresh();
  if (channel) channel.postMessage({ refresh: true });
  for (const id of [...selected]) if (!list.members.has(id) || media.get(id).moderation === "approved") selected.delete(id);
  bulkEnded(pressed);
  setStatus(t("host.status.bulkDone", { count: Number(job.done) || 0 }));
}

/** Every waiting media's id, read a page at a time (only where the server has no bulk approval). */
async function allPendingIds() {
  if (list.filter === "pending" && !list.next) return [...list.ids];
  const ids = [];
  let cursor = null;
  for (;;) {
    const query = { moderation: "pending", limit: "500" };
    if (cursor) query.cursor = cursor;
    const body = await readList(query);
    for (const m of body.media || []) if (m.moderation === "pending") ids.push(m.id);
    cursor = typeof body.next_cursor === "string" && body.next_cursor ? body.next_cursor : null;
    if (!cursor) return ids;
  }
}

// ------------------------------------------------------------ keyboard ----

/** Whether a key press is typing (in a text field or the reject form). */
function isTyping(target) {
  if (!target || !target.closest) return false;
  if (target.closest(".reject-form")) return true;
  return target.matches("textarea, select, [contenteditable], input:not([type=checkbox]):not([type=radio]):not([type=button])");
}

/**
 * Moves the focus `step` items on; past an end of the window, the window
 * grows first. From no item: to the first one in view.
 */
async function moveFocus(from, step) {
  let order = itemsInOrder();
  if (!order.length) return;
  let i = from ? order.indexOf(from) : -1;
  if (i < 0) {
    const inView = anchor();
    const first = inView ? inView.el : order[0];
    first.focus();
    first.scrollIntoView({ block: "nearest" });
    return;
  }
  if ((step > 0 && i === order.length - 1) || (step < 0 && i === 0)) {
    if (await extend(step)) {
      order = itemsInOrder();
      i = order.indexOf(from);
      if (i < 0) return;
    }
  }
  const next = order[Math.max(0, Math.min(order.length - 1, i + step))];
  next.focus();
  next.scrollIntoView({ block: "nearest" });
}

function onKey(e) {
  if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || isTyping(e.target)) return;
  const itemEl = e.target.closest ? e.target.closest(".media-item") : null;
  const id = itemEl ? itemEl.dataset.id : null;
  const m = id ? media.get(id) : null;
  switch (e.key) {
    case "j":
    case "k":
      e.preventDefault();
      moveFocus(itemEl, e.key === "j" ? 1 : -1);
      break;
    case "ArrowDown":
    case "ArrowRight":
    case "ArrowUp":
    case "ArrowLeft":
      // The arrows move between items only from an item: elsewhere they scroll.
      if (!itemEl) return;
      e.preventDefault();
      moveFocus(itemEl, e.key === "ArrowDown" || e.key === "ArrowRight" ? 1 : -1);
      break;
    case "a":
      if (!m || m.moderation === "approved") return;
      e.preventDefault();
      {
        const buttons = [...itemEl.querySelectorAll(".media-actions button")];
        decide(id, "approve", null, buttons);
      }
      break;
    case "r":
      if (!m || m.moderation === "rejected") return;
      e.preventDefault();
      items.get(id)?.openReject();
      break;
    case "x":
    case " ":
      // Space selects only from the item itself (on a button it presses it).
      if (!m || m.moderation === "approved" || (e.key === " " && e.target !== itemEl)) return;
      e.preventDefault();
      toggleSelected(id, !selected.has(id));
      break;
    default:
  }
}


// ------------------------------------------------------------- invite ----

/** The guest link for a guest code: the guest page beside this one. */
function guestLink(guestCode) {
  const url = new URL("./", location.href);
  const q = new URLSearchParams({ event, code: guestCode });
  const api = p.get("api");
  if (api) q.set("api", api);
  url.search = q.toString();
  return url.toString();
}

/** The link as a QR code: one SVG path of dark modules, with a quiet zone. */
function qrSvg(text, label) {
  const qr = qrcode(0, "M");
  qr.addData(text);
  qr.make();
  const n = qr.getModuleCount();
  const quiet = 4;
  const size = n + 2 * quiet;
  let d = "";
  for (let r = 0; r < n; r += 1) {
    for (let c = 0; c < n; c += 1) {
      if (qr.isDark(r, c)) d += `M${c + quiet} ${r + quiet}h1v1h-1z`;
    }
  }
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  svg.setAttribute("shape-rendering", "crispEdges");
  svg.setAttribute("class", "qr");
  const bg = document.createElementNS(NS, "rect");
  bg.setAttribute("width", String(size));
  bg.setAttribute("height", String(size));
  bg.setAttribute("fill", "#fff");
  const path = document.createElementNS(NS, "path");
  path.setAttribute("d", d);
  path.setAttribute("fill", "#000");
  svg.append(bg, path);
  return svg;
}

/** Whether a guest code opens this event (the wall answers `wrong_guest_code` otherwise). */
async function checkGuestCode(guestCode) {
  const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/wall`, {
    headers: { "X-Guest-Code": guestCode, Accept: "application/json" },
    cache: "no-store",
  });
  if (response.ok) return true;
  const err = await problemOf(response);
  if (err.code === "wrong_guest_code") return false;
  throw err;
}

/** A guest code from what the host pasted: a guest link, or the code itself. */
function codeFrom(text) {
  const value = text.trim();
  if (!value) return null;
  try {
    const url = new URL(value);
    return url.searchParams.get("code") ? url.searchParams.get("code").trim() : null;
  } catch {
    return value;
  }
}

/** Downloads the originals (`approved` or `all`) as one ZIP. */
async function download(which) {
  const error = $("download-error");
  error.hidden = true;
  try {
    const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/archive`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify({ media: which }),
    });
    if (!response.ok) throw await problemOf(response);
    const { url } = await response.json();
    // An attachment: the browser downloads it and the page stays.
    const link = h("a", { href: url, download: "", hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    document.body.dataset.download = which;
  } catch (err) {
    error.textContent = t("host.download.failed", { message: err && err.message ? err.message : String(err) });
    error.hidden = false;
  }
}

// ------------------------------------------------------------- safety ----

function safetyFailed(err) {
  const error = $("safety-error");
  error.textContent = t("host.safety.failed", { message: err && err.message ? err.message : String(err) });
  error.hidden = false;
}

/** Replaces the guest code, the wall token or the host token, after asking. */
async function rotate(what) {
  if (!window.confirm(t(`host.safety.confirm.${what}`))) return;
  const result = $("safety-result");
  $("safety-error").hidden = true;
  result.hidden = true;
  try {
    const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/rotate`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify({ what }),
    });
    if (!response.ok) throw await problemOf(response);
    const body = await response.json();
    if (what === "guest_code") {
      try {
        localStorage.removeItem(GUEST_CODE_KEY);
      } catch {
        // nothing kept
      }
      showInvite(body.guest_code, { fromServer: true });
      result.textContent = t("host.safety.done.guest_code");
    } else if (what === "wall_token") {
      result.replaceChildren(t("host.safety.done.wall_token"), " ", code(body.wall_token));
    } else {
      // From now on this page (and its address, to bookmark) uses the new token.
      token = body.host_token;
      const url = new URL(location.href);
      const fragment = new URLSearchParams(url.hash.slice(1));
      fragment.set("token", token);
      url.hash = fragment.toString();
      history.replaceState(history.state, "", url);
      result.replaceChildren(t("host.safety.done.host_token"), " ", code(url.toString()));
    }
    result.hidden = false;
    document.body.dataset.rotated = what;
  } catch (err) {
    safetyFailed(err);
  }
}

/** Deletes the event with every photo, video and guest session, after asking. */
async function deleteEvent() {
  if (!window.confirm(t("host.safety.confirm.delete", { event }))) return;
  $("safety-error").hidden = true;
  try {
    const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}`, { method: "DELETE", headers: headers() });
    if (!response.ok) throw await problemOf(response);
    stopped = true;
    showMessage(app, t("host.safety.deleted.title"), t("host.safety.deleted.text", { event }));
    document.body.dataset.deleted = "yes";
  } catch (err) {
    safetyFailed(err);
  }
}

/** The guest code, from the server; on a server too old to say, from the link or the host. */
async function setUpInvite() {
  try {
    const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/invite`, { headers: headers(), cache: "no-store" });
    if (response.ok) {
      const body = await response.json();
      if (body && typeof body.guest_code === "string") return showInvite(body.guest_code, { fromServer: true });
    } else {
      const err = await problemOf(response);
      // Only an older server (no such route) falls back to pasting.
      if (err.code !== "route_not_found") return;
    }
  } catch {
    // No answer now: the list's own errors say so; try what this browser kept.
  }
  let saved = null;
  try {
    saved = localStorage.getItem(GUEST_CODE_KEY);
  } catch {
    // storage refused: the host pastes it again next time
  }
  const given = p.get("code") || saved;
  if (given) showInvite(given, { check: true });
  else showCodeForm();
}

function showCodeForm(message = "") {
  const body = $("invite-body");
  const input = h("input", { class: "text-input", id: "guest-code", type: "text", autocomplete: "off", spellcheck: "false", "data-testid": "guest-code-input" });
  const error = h("p", { class: "form-error", "data-testid": "guest-code-error", role: "alert", text: message, hidden: !message });
  const submit = h("button", { class: "button button--primary", type: "submit", "data-testid": "guest-code-show" }, t("host.invite.show"));
  const form = h(
    "form",
    { class: "code-form" },
    h("p", { class: "invite-text", text: t("host.invite.needCode") }),
    h("label", { for: "guest-code", text: t("host.invite.codeLabel") }),
    h("div", { class: "code-row" }, input, submit),
    error,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const guestCode = codeFrom(input.value);
    if (!guestCode) return input.focus();
    submit.disabled = true;
    error.hidden = false;
    error.textContent = t("host.invite.checking");
    try {
      if (!(await checkGuestCode(guestCode))) {
        error.textContent = t("host.invite.wrongCode");
        submit.disabled = false;
        input.focus();
        return;
      }
    } catch (err) {
      error.textContent = t("host.invite.checkFailed", { message: err && err.message ? err.message : String(err) });
      submit.disabled = false;
      return;
    }
    try {
      localStorage.setItem(GUEST_CODE_KEY, guestCode);
    } catch {
      // not kept: shown for this visit only
    }
    showInvite(guestCode, { focus: true });
  });
  body.replaceChildren(form);
  document.body.dataset.invite = "needs-code";
}

/**
 * Shows the guest link, its QR code and the printable card. `check`: a
 * code from the link or from this browser is checked first (a wrong one
 * brings back the form).
 */
async function showInvite(guestCode, { check = false, focus = false, fromServer = false } = {}) {
  if (check) {
    try {
      if (!(await checkGuestCode(guestCode))) {
        try {
          localStorage.removeItem(GUEST_CODE_KEY);
        } catch {
          // nothing kept
        }
        showCodeForm(t("host.invite.wrongCode"));
        return;
      }
    } catch {
      // The server can't say now: show the link as given.
    }
  }
  const link = guestLink(guestCode);
  const copy = h("button", { class: "button", type: "button", "data-testid": "copy-link" }, t("host.invite.copy"));
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(link);
      copy.textContent = t("host.invite.copied");
    } catch {
      // No clipboard here: select the link for the host to copy.
      const range = document.createRange();
      range.selectNodeContents(anchor);
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
  });
  const print = h("button", { class: "button", type: "button", "data-testid": "print-card-button" }, t("host.invite.print"));
  print.addEventListener("click", () => window.print());
  const change = h("button", { class: "button button--quiet", type: "button", "data-testid": "change-code" }, t("host.invite.change"));
  change.addEventListener("click", () => {
    try {
      localStorage.removeItem(GUEST_CODE_KEY);
    } catch {
      // nothing kept
    }
    showCodeForm();
    $("guest-code").focus();
  });
  const anchor = h("a", { class: "invite-link", href: link, "data-testid": "guest-link", text: link });
  $("invite-body").replaceChildren(
    h("div", { class: "invite-qr", "data-testid": "qr" }, qrSvg(link, t("host.invite.qrLabel"))),
    h(
      "div",
      { class: "invite-details" },
      h("p", { class: "invite-text", text: t("host.invite.text") }),
      h("p", {}, anchor),
      h("div", { class: "invite-actions" }, copy, print, ...(fromServer ? [] : [change])),
    ),
  );
  $("print-card-qr").replaceChildren(qrSvg(link, t("host.invite.qrLabel")));
  $("print-card-link").textContent = link;
  document.body.dataset.invite = "shown";
  if (focus) copy.focus();
}
