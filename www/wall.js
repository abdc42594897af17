// The wall: approved photos and videos, newest first, live.
//
// It holds a screenful, not the event: it opens with the newest N approved
// items (`GET /v1/events/{slug}/wall?last=N`; N fits the screen, at most
// 100, `?keep=` sets it), adds what is approved from then on, and lets the
// oldest go beyond N (its element removed and its image or video released:
// no `src` left to hold a decoded picture). So a festival of 100,000 photos
// costs the wall what a party of 100 does.
//
// After the first read, the wall listens to the server's live feed
// (Server-Sent Events, GET /v1/events/{slug}/wall/live): a new approval
// shows within a second, a take-down at once. While the feed is not open
// (an old server, a proxy that cuts it, `?live=0`), the wall polls with its
// cursor every 3 s; a poll that finds a full page (many approvals at once)
// reads the newest N instead of paging through them all.
//
// The cursor only brings new approvals, and a photo taken off the wall on
// another server instance is not told through this one's feed; so the wall
// reconciles: it reads the newest N again (`?last=N`, never the event from
// its start) and drops what it shows that is no longer among them, adds
// what is missing. It does so when the feed comes back after an error (what
// was taken down meanwhile was not told), after a poll that failed, and
// every 15 s (`?resync_ms=`): a read of N items at most, whatever the
// event's size. A `revoked` event (the host rotated the code, or deleted the
// event) closes the feed; the next read is refused and says so. Photos are
// the server's display renditions (no metadata); a rendition still being
// made is asked for again.

import { h, params, apiBase, showMessage, code, problemOf, isVideo } from "./common.js";
import { t, translatePage } from "./i18n.js";

const POLL_MS = 3_000;
/** Items in one page of the wall (the server's). */
const PAGE_SIZE = 100;
/** The most items the server starts a wall with (`last`), and so the most it keeps. */
const MAX_KEEP = 100;

const app = document.getElementById("app");
const $ = (id) => document.getElementById(id);

const p = params();
const event = p.get("event");
const guestCode = p.get("code");
const api = apiBase(p);
const base = api.base;
const resyncMs = Math.max(1_000, Number(p.get("resync_ms")) || 15_000);
const liveWanted = p.get("live") !== "0" && "EventSource" in window;
/** How many items the wall keeps: what fits the screen, twice over. */
const keep = keepCount();
/** Tries of an image that did not load (a rendition still being made). */
const IMAGE_TRIES = 3;

let cursor = null;
/**
 * What the wall shows, by id: `{li, release, rank}`. `rank`: its place in
 * the wall's order (the server's: the order items were placed on the wall,
 * which the feed and `last` follow), the oldest going first when the wall
 * is full. On screen they are newest first by approval time.
 */
const shown = new Map();
/** The last rank given. */
let ranked = 0;
/** How often each media left the wall unloaded (it comes back at most
 * DROPS times: a video this browser cannot play is not fetched for ever). */
const drops = new Map();
const DROPS = 5;
/** Ids the live feed took down, with when: a read begun before then does not bring them back. */
const takenDown = new Map();
let failures = 0;
/** The live feed, once opened. */
let live = null;
/** Whether the feed was open and then failed (its return means a resync). */
let liveBroke = false;
let resyncing = false;

translatePage();
document.title = t("wall.docTitle");

if (!event || !guestCode) {
  const missing = [!event && "event", !guestCode && "code"].filter(Boolean).join(", ");
  const [before, after] = t("common.looksLike").split("{link}");
  app.classList.add("page");
  showMessage(
    app,
    t("wall.missing.title"),
    t("wall.missing.text", { missing }),
    h("span", {}, before, code(`${location.origin}/wall.html?event=…&code=…`), after),
    t("wall.missing.ask"),
  );
  document.body.dataset.error = "missing_params";
} else if (api.refused) {
  app.classList.add("page");
  showMessage(app, t("common.api.title"), t("common.api.text", { origin: api.refused }), t("common.api.ask"));
  document.body.dataset.error = "api_not_allowed";
} else {
  $("loading").remove();
  $("wall-page").hidden = false;
  $("title").textContent = t("wall.docTitleEvent", { event });
  document.title = t("wall.docTitleEvent", { event });
  document.body.dataset.keep = String(keep);
  poll(true);
  setInterval(() => resync(), resyncMs);
}

/**
 * The items to keep: `?keep=` (1 to 100), else about two screens of tiles
 * (a column per 300 px, a row per 200 px), from 24 to 100.
 */
function keepCount() {
  const asked = Math.floor(Number(p.get("keep")));
  if (asked >= 1) return Math.min(MAX_KEEP, asked);
  const columns = Math.max(1, Math.round(window.innerWidth / 300));
  const rows = Math.max(1, Math.ceil(window.innerHeight / 200));
  return Math.max(24, Math.min(MAX_KEEP, columns * rows * 2));
}

/**
 * One page of the wall: after the cursor `after`, or (when null) the
 * newest `keep` items.
 */
async function fetchPage(after) {
  const url = new URL(`${base}/v1/events/${encodeURIComponent(event)}/wall`);
  if (after) url.searchParams.set("after", after);
  else url.searchParams.set("last", String(keep));
  const response = await fetch(url, { headers: { "X-Guest-Code": guestCode, Accept: "application/json" }, cache: "no-store" });
  if (!response.ok) throw await problemOf(response);
  const body = await response.json();
  return { items: Array.isArray(body.items) ? body.items : [], next: typeof body.next_cursor === "string" ? body.next_cursor : null };
}

/**
 * Reads the newest `keep` items again and makes the wall those: drops what
 * it shows that is no longer among them (taken down, here or on another
 * server), adds what is missing (one dropped while its rendition was being
 * made, one a gap in the feed missed). `jump`: the cursor goes on from the
 * newest (what lies between is not shown anyway). Resolves to whether it
 * could read.
 */
async function resync(jump = false) {
  if (resyncing) return false;
  resyncing = true;
  // Only what was shown before this read began: an item the feed adds
  // meanwhile may have been approved after the read.
  const before = new Set(shown.keys());
  const began = Date.now();
  try {
    const page = await fetchPage(null);
    const items = page.items.filter((item) => item && item.id);
    const current = new Set(items.map((item) => item.id));
    for (const id of before) if (!current.has(id) && shown.has(id)) drop(id);
    // Ranked again: what it read in the server's order, oldest first, and
    // what the feed added while it read after that (newer than all it read).
    const base = ranked;
    ranked += items.length;
    const during = [...shown.entries()].filter(([id]) => !before.has(id) && !current.has(id)).sort((a, b) => a[1].rank - b[1].rank);
    for (const [, entry] of during) entry.rank = ++ranked;
    items.forEach((item, i) => {
      const entry = shown.get(item.id);
      if (entry) entry.rank = base + i + 1;
      else if (!before.has(item.id) && (takenDown.get(item.id) || 0) < began && (drops.get(item.id) || 0) < DROPS) add(item, base + i + 1);
    });
    if ((jump || !cursor) && page.next) cursor = page.next;
    for (const [id, at] of takenDown) if (at < began) takenDown.delete(id);
    updateStatus();
    return true;
  } catch {
    // The regular poll reports connection trouble; try again next time.
    return false;
  } finally {
    resyncing = false;
  }
}

/** Whether the live feed is open (then there is nothing to poll for). */
function isLive() {
  return live !== null && live.readyState === EventSource.OPEN;
}

/** Listens to the live feed from the cursor on; polling covers its gaps. */
function listen() {
  const url = new URL(`${base}/v1/events/${encodeURIComponent(event)}/wall/live`);
  url.searchParams.set("code", guestCode);
  if (cursor) url.searchParams.set("after", cursor);
  else url.searchParams.set("last", String(keep));
  live = new EventSource(url);
  live.addEventListener("open", () => {
    document.body.dataset.live = "1";
    failures = 0;
    updateStatus();
    // Back after an error: what was taken down meanwhile was not told.
    if (liveBroke) {
      liveBroke = false;
      resync();
    }
  });
  live.addEventListener("error", () => {
    // It comes back by itself (with the last event's id) unless the server
    // refused it; meanwhile the poll runs.
    if (document.body.dataset.live) liveBroke = true;
    delete document.body.dataset.live;
  });
  live.addEventListener("items", (e) => {
    const body = JSON.parse(e.data);
    for (const item of body.items || []) add(item);
    if (typeof body.next_cursor === "string") cursor = body.next_cursor;
    updateStatus();
  });
  live.addEventListener("revoked", () => {
    // The host rotated this wall's code or deleted the event: the feed is
    // over, and the next poll shows why.
    live.close();
    delete document.body.dataset.live;
  });
  live.addEventListener("removed", (e) => {
    const { id } = JSON.parse(e.data);
    takenDown.set(id, Date.now());
    drop(id);
    updateStatus();
  });
}

async function poll(first = false) {
  let again = POLL_MS;
  if (isLive()) {
    setTimeout(poll, again);
    return;
  }
  try {
    const after = cursor;
    const { items, next } = await fetchPage(after);
    if (after && items.length >= PAGE_SIZE) {
      // A full page: many were approved since (the wall was away). Only
      // the newest `keep` can show: read those instead of every page.
      if (!(await resync(true))) cursor = next;
    } else {
      for (const item of items) add(item);
      if (next) cursor = next;
    }
    // Back after failed reads: something may have been taken down meanwhile.
    if (failures > 0 && after) resync();
    failures = 0;
    updateStatus();
  } catch (err) {
    if (err && (err.status === 401 || err.status === 403 || err.status === 404)) {
      const what = err.status === 404 ? t("wall.bad.notFound", { event }) : t("wall.bad.code");
      app.classList.add("page");
      showMessage(app, t("wall.bad.title"), what, t("wall.bad.details", { message: err.message }));
      document.body.dataset.error = err.code || "auth";
      return;
    }
    failures += 1;
    $("status").textContent = t("wall.reconnecting");
    again = Math.min(30_000, POLL_MS * 2 ** Math.min(failures, 4));
  }
  if (first) {
    document.body.dataset.ready = "1";
    if (liveWanted && !document.body.dataset.error) listen();
  }
  setTimeout(poll, again);
}

/**
 * Adds an item at `rank` in the wall's order (by default after all shown);
 * beyond `keep`, the oldest go.
 */
function add(item, rank = ranked + 1) {
  if (!item || !item.id || shown.has(item.id)) return;
  ranked = Math.max(ranked, rank);
  // A full wall: one older than everything on it would go at once.
  if (shown.size >= keep && [...shown.values()].every((entry) => entry.rank > rank)) return;
  // Its listeners end with it (a released image must not be asked for again).
  const alive = new AbortController();
  const { signal } = alive;
  let media;
  if (isVideo(item.content_type) && !item.placeholder) {
    // The shareable copy (no location, no device), its poster until it plays.
    media = h("video", { src: item.url, poster: item.thumb_url || "", autoplay: true, loop: true, playsinline: true, preload: "metadata", "aria-label": t("common.video") });
    media.muted = true;
  } else {
    media = h("img", { src: item.url, alt: t("common.photo"), decoding: "async" });
  }
  let tries = 1;
  media.addEventListener("error", () => {
    // A rendition (a photo's, a video's) may still be in the making: ask
    // again later.
    if (tries < IMAGE_TRIES) {
      tries += 1;
      setTimeout(() => {
        if (!signal.aborted) media.src = `${item.url}&try=${tries}`;
      }, 3_000);
      return;
    }
    // Not made yet (a long video's transcode): off the wall until the next
    // resync finds it again.
    drop(item.id);
    drops.set(item.id, (drops.get(item.id) || 0) + 1);
    updateStatus();
  }, { signal });
  const li = h("li", { class: "wall-item", "data-testid": "wall-item", dataset: { id: item.id, approvedAt: item.approved_at || "" } }, media);
  const release = () => {
    alive.abort();
    // No source left: the browser lets go of the picture (and a video of
    // its buffer) even while something still holds the element.
    if (media.tagName === "VIDEO") {
      media.pause();
      media.removeAttribute("poster");
      media.removeAttribute("src");
      media.load();
    } else {
      media.removeAttribute("src");
    }
    li.remove();
  };
  shown.set(item.id, { li, release, rank });
  // Newest first: before the first item approved no later (items arrive in
  // approval order; one whose rendition came late comes back in its place).
  const older = Array.from($("wall").children).find((el) => (el.dataset.approvedAt || "") <= (item.approved_at || ""));
  $("wall").insertBefore(li, older || null);
  $("empty").hidden = true;
  // Beyond `keep`: the oldest go.
  while (shown.size > keep) {
    let oldest = null;
    for (const [id, entry] of shown) if (!oldest || entry.rank < oldest[1]) oldest = [id, entry.rank];
    drop(oldest[0]);
  }
}

/** Takes one item off the wall and releases its image. */
function drop(id) {
  const entry = shown.get(id);
  if (!entry) return;
  shown.delete(id);
  entry.release();
  $("empty").hidden = shown.size > 0;
}

function updateStatus() {
  const n = shown.size;
  $("status").textContent = n === 0 ? t("wall.live") : t("wall.count", { count: n });
}
