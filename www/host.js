// The host page: approve or reject what guests uploaded, invite guests.
//
// - A filter by state (waiting, approved, rejected, all), with counts.
// - Keyboard: every item is a focus stop; j/k or the arrows move between
//   items, `a` approves the focused one, `r` opens its reject form (Enter
//   rejects, Escape goes back), `x` (or Space on the item) selects it. After
//   a decision the focus goes to the item that took its place.
// - Several at once: "Approve selected" and "Approve all waiting", made of
//   the same per-item moderation calls (a few at a time).
// - Other host tabs of the same event hear of every decision at once
//   (BroadcastChannel); every tab also re-reads the list every 5 s
//   (`?refresh_ms=`), which covers hosts on other devices.
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

import { h, params, apiBase, showMessage, code, problemOf, isVideo, isImage, icon, ICONS } from "./common.js";
import { t, translatePage, formatBytes, timeAgo } from "./i18n.js";
import qrcode from "./vendor/qrcode-generator.mjs";

const FILTERS = ["pending", "approved", "rejected", "all"];
/** Moderation calls at once in a bulk approval. */
const BULK_CONCURRENCY = 3;

const app = document.getElementById("app");
const $ = (id) => document.getElementById(id);

let token = hostToken();
const p = params();
const event = p.get("event");
const api = apiBase(p);
const base = api.base;
const refreshMs = Math.max(1_000, Number(p.get("refresh_ms")) || 5_000);
const GUEST_CODE_KEY = `upload-once-host-guest-code:${event}`;

/** Every media record, by id (the server's latest answer, plus our decisions). */
let media = new Map();
/** How many uploads were a photo already here, and not stored again. */
let deduplicated = 0;
/**
 * Decisions this page made or heard of from another tab, by media id, with
 * when: a list read before then does not undo them.
 */
const decided = new Map();
/** Rendered items, by id: { root, key, age, select }. */
const items = new Map();
/** Ids ticked for "Approve selected". */
const selected = new Set();
let filter = "pending";
let lastOk = 0;
let loading = false;
let stopped = false;
let bulkRunning = false;
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
  $("approve-all").addEventListener("click", () => approveMany(all().filter((m) => m.moderation === "pending").map((m) => m.id)));
  document.addEventListener("keydown", onKey);
  // Another host link pasted into this tab may change only the fragment: start again with its token.
  window.addEventListener("hashchange", () => {
    if (hostToken() !== token) location.reload();
  });
  if (channel) {
    channel.addEventListener("message", (e) => {
      const m = e.data && e.data.media;
      if (!m || !m.id) return;
      decided.set(m.id, { media: m, at: Date.now() });
      media.set(m.id, m);
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
  render();
  load().then(() => {
    document.body.dataset.ready = "1";
  });
  setInterval(() => {
    if (!stopped) load();
  }, refreshMs);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && !stopped) load();
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

async function load() {
  if (loading) return;
  loading = true;
  const started = Date.now();
  try {
    // One request for every filter (the counts need them all).
    const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/media`, { headers: headers(), cache: "no-store" });
    if (!response.ok) throw await problemOf(response);
    const body = await response.json();
    media = new Map((body.media || []).map((m) => [m.id, m]));
    deduplicated = Number(body.deduplicated) || 0;
    // A decision made (here or in another tab) after this list was read
    // stands until a later list has it.
    for (const [id, d] of decided) {
      if (d.at >= started && media.has(id)) media.set(id, d.media);
      else decided.delete(id);
    }
    lastOk = Date.now();
    if (!bulkRunning) setStatus(updatedLine());
    render();
  } catch (err) {
    if (err && (err.status === 401 || err.status === 403 || err.status === 404)) {
      stopped = true;
      const what = err.status === 404 ? t("host.bad.notFound", { event }) : t("host.bad.token");
      showMessage(app, t("host.bad.title"), what, t("host.bad.details", { message: err.message }));
      document.body.dataset.error = err.code || "auth";
    } else {
      setStatus(t("host.status.unreachable", { message: err && err.message ? err.message : String(err) }), true);
    }
  } finally {
    loading = false;
  }
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
  render();
}

function all() {
  return [...media.values()];
}

/** Ticked items that are shown and can still be approved. */
function selectedApprovable() {
  return [...items.keys()].filter((id) => selected.has(id) && media.get(id) && media.get(id).moderation !== "approved");
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
 * Shows the filtered items. `hint`: where the focus was before a decision
 * disabled its controls (a disabled control drops the focus).
 */
function render(hint = null) {
  const list = all();
  for (const state of ["pending", "approved", "rejected"]) {
    $(`count-${state}`).textContent = String(list.filter((m) => m.moderation === state).length);
  }
  $("count-all").textContent = String(list.length);
  // Uploads of a photo already here (the event's dedup scope): not stored
  // again, so not in the list; said so the counts add up for the host.
  const dedup = $("deduplicated");
  dedup.hidden = deduplicated === 0;
  dedup.textContent = deduplicated ? t("host.deduplicated", { count: deduplicated }) : "";

  // Waiting: oldest first (a queue). Decided and all: most recent first.
  let shown = filter === "all" ? list : list.filter((m) => m.moderation === filter);
  if (filter !== "pending") shown = shown.reverse();

  // Where the keyboard focus is, so that it stays on the same item or
  // goes to the one that takes its place.
  const context = focusContext() || (hint && focusLost() ? hint : null);

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
  for (const id of [...selected]) if (!media.has(id) || media.get(id).moderation === "approved") selected.delete(id);

  const empty = $("empty");
  empty.textContent = t(`host.empty.${filter}`);
  empty.hidden = shown.length > 0;
  updateBulk();

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
}

function updateBulk() {
  const pending = all().filter((m) => m.moderation === "pending").length;
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
  decided.set(updated.id, { media: updated, at: Date.now() });
  media.set(updated.id, updated);
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
  bulkRunning = false;
  render();
  // The pressed button was disabled while it ran: the focus goes back to
  // it, or (when there is nothing left for it to do) to the first item.
  if (focusLost()) {
    if (pressed && pressed.isConnected && !pressed.disabled) pressed.focus();
    else (itemsInOrder()[0] || $("empty")).focus();
  }
  const approved = ids.length - failures.length;
  if (failures.length) {
    const first = failures[0];
    setStatus(t("host.status.bulkFailed", { count: failures.length, message: first && first.message ? first.message : String(first) }), true);
  } else {
    setStatus(t("host.status.bulkDone", { count: approved }));
  }
}

// ------------------------------------------------------------ keyboard ----

/** Whether a key press is typing (in a text field or the reject form). */
function isTyping(target) {
  if (!target || !target.closest) return false;
  if (target.closest(".reject-form")) return true;
  return target.matches("textarea, select, [contenteditable], input:not([type=checkbox]):not([type=radio]):not([type=button])");
}

function moveFocus(from, step) {
  const order = itemsInOrder();
  if (!order.length) return;
  const i = from ? order.indexOf(from) : -1;
  const next = i < 0 ? order[step > 0 ? 0 : order.length - 1] : order[Math.max(0, Math.min(order.length - 1, i + step))];
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
