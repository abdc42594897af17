// The wall: approved photos and videos, newest first, live.
// After the first read, the wall listens to the server's live feed
// (Server-Sent Events, GET /v1/events/{slug}/wall/live): a new approval
// shows within a second, a take-down at once. While the feed is not open
// (an old server, a proxy that cuts it, `?live=0`), the wall polls with its
// cursor every 3 s, as before. The cursor only brings new approvals; a photo
// taken off the wall on another server is not signalled through it, so
// every 15 s (`?resync_ms=`) the wall reads the whole approved set again
// from the start and drops what is no longer in it. A `revoked` event (the
// host rotated the code, or deleted the event) closes the feed; the next
// poll is refused and says so. Photos are the server's
// display renditions (no metadata); a rendition still being made is asked
// for again.

import { h, params, apiBase, showMessage, code, problemOf, isVideo } from "./common.js";
import { t, translatePage } from "./i18n.js";

const POLL_MS = 3_000;
const PAGE_SIZE = 100;

const app = document.getElementById("app");
const $ = (id) => document.getElementById(id);

const p = params();
const event = p.get("event");
const guestCode = p.get("code");
const api = apiBase(p);
const base = api.base;
const resyncMs = Math.max(1_000, Number(p.get("resync_ms")) || 15_000);
const liveWanted = p.get("live") !== "0" && "EventSource" in window;
/** Tries of an image that did not load (a rendition still being made). */
const IMAGE_TRIES = 3;

let cursor = null;
const seen = new Set();
/** How often each media left the wall unloaded (it comes back at most
 * DROPS times: a video this browser cannot play is not fetched for ever). */
const drops = new Map();
const DROPS = 5;
let failures = 0;
/** The live feed, once opened. */
let live = null;

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
  poll(true);
  setTimeout(resync, resyncMs);
}

/** One page of the wall after `after` (from the start when null). */
async function fetchPage(after) {
  const url = new URL(`${base}/v1/events/${encodeURIComponent(event)}/wall`);
  if (after) url.searchParams.set("after", after);
  const response = await fetch(url, { headers: { "X-Guest-Code": guestCode, Accept: "application/json" }, cache: "no-store" });
  if (!response.ok) throw await problemOf(response);
  const body = await response.json();
  return { items: Array.isArray(body.items) ? body.items : [], next: typeof body.next_cursor === "string" ? body.next_cursor : null };
}

/** Reads every approved item from the start; drops the ones taken down. */
async function resync() {
  // Only what was shown before this read began: an item the poll adds
  // meanwhile may have been approved after its page was read.
  const before = new Set(seen);
  try {
    const current = new Set();
    let after = null;
    for (;;) {
      const page = await fetchPage(after);
      for (const item of page.items) {
        if (!item || !item.id) continue;
        current.add(item.id);
        // One dropped because its rendition was not made yet, back.
        if (!seen.has(item.id) && !before.has(item.id) && (drops.get(item.id) || 0) < DROPS) add(item);
      }
      if (page.items.length < PAGE_SIZE || !page.next || page.next === after) break;
      after = page.next;
    }
    for (const li of Array.from($("wall").children)) {
      if (before.has(li.dataset.id) && !current.has(li.dataset.id)) {
        li.remove();
        seen.delete(li.dataset.id);
      }
    }
    $("empty").hidden = $("wall").children.length > 0;
    updateStatus();
  } catch {
    // The regular poll reports connection trouble; try again next time.
  }
  setTimeout(resync, resyncMs);
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
  live = new EventSource(url);
  live.addEventListener("open", () => {
    document.body.dataset.live = "1";
    failures = 0;
    updateStatus();
  });
  live.addEventListener("error", () => {
    // It comes back by itself (with the last event's id) unless the server
    // refused it; meanwhile the poll runs.
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
    const li = $("wall").querySelector(`[data-id="${CSS.escape(String(id))}"]`);
    if (li) li.remove();
    seen.delete(id);
    $("empty").hidden = $("wall").children.length > 0;
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
    const { items, next } = await fetchPage(cursor);
    for (const item of items) add(item);
    if (next) cursor = next;
    failures = 0;
    updateStatus();
    // A full page: there may be more right now.
    if (items.length >= PAGE_SIZE) again = 0;
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

function add(item) {
  if (!item || !item.id || seen.has(item.id)) return;
  seen.add(item.id);
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
      setTimeout(() => { media.src = `${item.url}&try=${tries}`; }, 3_000);
      return;
    }
    // Not made yet (a long video's transcode): off the wall until the next
    // resync finds it again.
    li.remove();
    seen.delete(item.id);
    drops.set(item.id, (drops.get(item.id) || 0) + 1);
  });
  const li = h("li", { class: "wall-item", "data-testid": "wall-item", dataset: { id: item.id, approvedAt: item.approved_at || "" } }, media);
  // Newest first: before the first item approved no later (items arrive in
  // approval order; one whose rendition came late comes back in its place).
  const older = Array.from($("wall").children).find((el) => (el.dataset.approvedAt || "") <= (item.approved_at || ""));
  $("wall").insertBefore(li, older || null);
  $("empty").hidden = true;
}

function updateStatus() {
  const n = seen.size;
  $("status").textContent = n === 0 ? t("wall.live") : t("wall.count", { count: n });
}
