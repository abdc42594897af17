// The host page: approve or reject what guests uploaded.

import { h, params, apiBase, showMessage, code, formatBytes, timeAgo, problemOf, isVideo, isImage, icon, ICONS } from "./common.js";

const REFRESH_MS = 5_000;
const EMPTY = {
  pending: "Nothing is waiting. New photos show up here by themselves.",
  approved: "Nothing approved yet. Approved photos and videos appear on the wall.",
  rejected: "Nothing rejected.",
};

const app = document.getElementById("app");
const $ = (id) => document.getElementById(id);

const p = params();
const event = p.get("event");
const token = p.get("token");
const base = apiBase(p);

/** Every media record, by id (the server's latest answer, plus our decisions). */
let media = new Map();
/** Rendered items, by id: { root, key, rejecting }. */
const items = new Map();
let tab = "pending";
let lastOk = 0;
let loading = false;
let stopped = false;

if (!event || !token) {
  const missing = [!event && "event", !token && "token"].filter(Boolean).join(" and ");
  showMessage(
    app,
    "Please use your host link",
    `This page needs the host link printed when the event was created (it is missing the ${missing}).`,
    h("span", {}, "It looks like ", code(`${location.origin}/host.html?event=…&token=…`), "."),
    "Keep that link private: it lets anyone approve or reject photos.",
  );
  document.body.dataset.error = "missing_params";
} else {
  start();
}

function start() {
  $("loading").remove();
  $("host").hidden = false;
  $("title").textContent = `Approve photos for “${event}”`;
  document.title = `Host · ${event}`;
  for (const button of document.querySelectorAll(".tab")) {
    button.addEventListener("click", () => selectTab(button.dataset.tab));
  }
  load().then(() => {
    document.body.dataset.ready = "1";
  });
  setInterval(() => {
    if (!stopped) load();
  }, REFRESH_MS);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && !stopped) load();
  });
  setInterval(() => {
    if (lastOk) setStatus(`Updated ${timeAgo(lastOk)} · refreshes every 5 s`);
  }, 15_000);
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${token}`, Accept: "application/json", ...extra };
}

async function load() {
  if (loading) return;
  loading = true;
  try {
    // One request for all three tabs (the counts need them all).
    const response = await fetch(`${base}/v1/events/${encodeURIComponent(event)}/media`, { headers: headers(), cache: "no-store" });
    if (!response.ok) throw await problemOf(response);
    const body = await response.json();
    media = new Map((body.media || []).map((m) => [m.id, m]));
    lastOk = Date.now();
    setStatus("Updated just now · refreshes every 5 s");
    render();
  } catch (err) {
    if (err && (err.status === 401 || err.status === 403 || err.status === 404)) {
      stopped = true;
      const what = err.status === 404 ? `There is no event called “${event}” on this server.` : "The host token in this link is not valid for this event.";
      showMessage(app, "This host link doesn't work", what, "Use the host link printed when the event was created. Details: " + err.message);
      document.body.dataset.error = err.code || "auth";
    } else {
      setStatus(`Couldn't reach the server (${err && err.message ? err.message : err}). Trying again…`, true);
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

function selectTab(name) {
  tab = name;
  for (const button of document.querySelectorAll(".tab")) {
    button.setAttribute("aria-selected", String(button.dataset.tab === name));
  }
  $("grid").setAttribute("aria-labelledby", `tab-${name}`);
  render();
}

function render() {
  const all = [...media.values()];
  for (const state of ["pending", "approved", "rejected"]) {
    $(`count-${state}`).textContent = String(all.filter((m) => m.moderation === state).length);
  }
  // Pending: oldest first (a queue). Decided: most recent first.
  let shown = all.filter((m) => m.moderation === tab);
  if (tab !== "pending") shown = shown.reverse();

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
    const key = `${m.moderation}|${m.moderation_reason || ""}`;
    if (!item || item.key !== key) {
      const fresh = createItem(m);
      if (item) item.root.replaceWith(fresh.root);
      item = fresh;
      items.set(m.id, item);
    } else {
      item.age.textContent = `Uploaded ${timeAgo(m.created_at)}`;
    }
    // Keep the order without re-creating (previews would reload).
    const want = previous ? previous.nextSibling : grid.firstChild;
    if (want !== item.root) grid.insertBefore(item.root, want);
    previous = item.root;
  }

  const empty = $("empty");
  empty.textContent = EMPTY[tab];
  empty.hidden = shown.length > 0;
}

function preview(m) {
  if (isVideo(m.content_type)) {
    const video = h("video", { controls: true, preload: "metadata", playsinline: true, src: m.url });
    video.muted = true;
    return video;
  }
  if (isImage(m.content_type)) {
    return h("img", { src: m.url, alt: `Photo “${m.filename}”`, loading: "lazy", decoding: "async" });
  }
  return icon(ICONS.photo, 40);
}

function createItem(m) {
  const testid = m.moderation === "pending" ? "pending-item" : "media-item";
  const age = h("span", { text: `Uploaded ${timeAgo(m.created_at)}` });
  const meta = h(
    "p",
    { class: "media-meta" },
    h("strong", { title: m.filename, text: m.filename }),
    `${formatBytes(m.size)} · `,
    age,
  );
  const info = h("div", { class: "media-info" }, meta);
  if (m.moderation === "rejected") {
    info.append(h("p", { class: "media-meta", text: m.moderation_reason ? `Reason: ${m.moderation_reason}` : "No reason given." }));
  }
  const actions = h("div", { class: "media-actions" });
  const approve = h("button", { class: "button button--primary", type: "button", "data-testid": "approve" }, m.moderation === "rejected" ? "Approve after all" : "Approve");
  const reject = h("button", { class: "button button--danger", type: "button", "data-testid": "reject" }, m.moderation === "approved" ? "Take off the wall" : "Reject");
  if (m.moderation !== "approved") actions.append(approve);
  if (m.moderation !== "rejected") actions.append(reject);
  if (actions.children.length === 1) actions.style.gridTemplateColumns = "1fr";
  info.append(actions);

  const root = h("li", { class: "media-item", "data-testid": testid, dataset: { id: m.id, moderation: m.moderation } }, h("div", { class: "media-preview" }, preview(m)), info);
  const item = { root, age, key: `${m.moderation}|${m.moderation_reason || ""}` };

  approve.addEventListener("click", () => decide(m.id, "approve", null, [approve, reject]));
  reject.addEventListener("click", () => {
    if (root.querySelector(".reject-form")) return;
    actions.hidden = true;
    const inputId = `reason-${m.id}`;
    const input = h("input", {
      class: "text-input",
      id: inputId,
      type: "text",
      maxlength: "500",
      placeholder: "e.g. blurry, or a private moment",
      autocomplete: "off",
      "data-testid": "reject-reason",
    });
    const confirm = h("button", { class: "button button--danger", type: "submit", "data-testid": "reject-confirm" }, m.moderation === "approved" ? "Take it off" : "Reject");
    const cancel = h("button", { class: "button", type: "button", "data-testid": "reject-cancel" }, "Cancel");
    const form = h(
      "form",
      { class: "reject-form" },
      h("label", { for: inputId, text: "Reason (optional, the guest sees it)" }),
      input,
      h("div", { class: "media-actions" }, confirm, cancel),
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      decide(m.id, "reject", input.value.trim() || null, [confirm, cancel, input]);
    });
    cancel.addEventListener("click", () => {
      form.remove();
      actions.hidden = false;
    });
    info.append(form);
    input.focus();
  });
  return item;
}

async function decide(id, decision, reason, controls) {
  for (const c of controls) c.disabled = true;
  try {
    const body = reason ? { decision, reason } : { decision };
    const response = await fetch(`${base}/v1/media/${encodeURIComponent(id)}/moderation`, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await problemOf(response);
    const updated = await response.json();
    media.set(updated.id, updated);
    render();
  } catch (err) {
    for (const c of controls) c.disabled = false;
    setStatus(`Couldn't save that decision: ${err && err.message ? err.message : err}`, true);
  }
}
