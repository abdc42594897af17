// The wall: approved photos and videos, newest first, polled every 3 s.

import { h, params, apiBase, showMessage, code, problemOf, isVideo } from "./common.js";

const POLL_MS = 3_000;

const app = document.getElementById("app");
const $ = (id) => document.getElementById(id);

const p = params();
const event = p.get("event");
const guestCode = p.get("code");
const base = apiBase(p);

let cursor = null;
const seen = new Set();
let failures = 0;

if (!event || !guestCode) {
  const missing = [!event && "event", !guestCode && "code"].filter(Boolean).join(" and ");
  app.classList.add("page");
  showMessage(
    app,
    "Please use the wall link",
    `This page needs the wall link of the event (it is missing the ${missing}).`,
    h("span", {}, "It looks like ", code(`${location.origin}/wall.html?event=…&code=…`), "."),
    "Ask the host for it.",
  );
  document.body.dataset.error = "missing_params";
} else {
  $("loading").remove();
  $("wall-page").hidden = false;
  $("title").textContent = `${event} · photo wall`;
  document.title = `${event} · photo wall`;
  poll(true);
}

async function poll(first = false) {
  let again = POLL_MS;
  try {
    const url = new URL(`${base}/v1/events/${encodeURIComponent(event)}/wall`);
    if (cursor) url.searchParams.set("after", cursor);
    const response = await fetch(url, { headers: { "X-Guest-Code": guestCode, Accept: "application/json" }, cache: "no-store" });
    if (!response.ok) throw await problemOf(response);
    const body = await response.json();
    const items = Array.isArray(body.items) ? body.items : [];
    for (const item of items) add(item);
    if (typeof body.next_cursor === "string") cursor = body.next_cursor;
    failures = 0;
    updateStatus();
    // A full page: there may be more right now.
    if (items.length >= 100) again = 0;
  } catch (err) {
    if (err && (err.status === 401 || err.status === 403 || err.status === 404)) {
      const what = err.status === 404 ? `There is no event called “${event}” on this server.` : "The code in this link does not open this event's wall.";
      app.classList.add("page");
      showMessage(app, "This wall link doesn't work", what, "Ask the host for the wall link. Details: " + err.message);
      document.body.dataset.error = err.code || "auth";
      return;
    }
    failures += 1;
    $("status").textContent = "Reconnecting…";
    again = Math.min(30_000, POLL_MS * 2 ** Math.min(failures, 4));
  }
  if (first) document.body.dataset.ready = "1";
  setTimeout(poll, again);
}

function add(item) {
  if (!item || !item.id || seen.has(item.id)) return;
  seen.add(item.id);
  let media;
  if (isVideo(item.content_type)) {
    media = h("video", { src: item.url, autoplay: true, loop: true, playsinline: true, preload: "metadata", "aria-label": "Video" });
    media.muted = true;
  } else {
    media = h("img", { src: item.url, alt: "Photo", decoding: "async" });
  }
  media.addEventListener("error", () => li.remove(), { once: true });
  const li = h("li", { class: "wall-item", "data-testid": "wall-item", dataset: { id: item.id, approvedAt: item.approved_at || "" } }, media);
  // Newest first: items arrive in approval order.
  $("wall").prepend(li);
  $("empty").hidden = true;
}

function updateStatus() {
  const n = seen.size;
  $("status").textContent = n === 0 ? "Live" : `${n} ${n === 1 ? "photo" : "photos"} · live`;
}
