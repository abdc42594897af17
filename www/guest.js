// The guest page: pick photos and videos, see where each one stands.
//
// Every card shows the three states of an attempt apart — the transfer of
// the bytes, the confirmation of the media record, the host's moderation —
// plus progress, the last error and what the guest can do about it.

import init, { Uploader } from "/pkg/upload_once.js";
import { h, icon, ICONS, params, apiBase, showMessage, code, formatBytes, isVideo } from "./common.js";

const REFRESH_MS = 15_000;
const NOTICE_MS = 8_000;

const app = document.getElementById("app");
const $ = (id) => document.getElementById(id);

/** The latest view of every attempt, by id. */
const attempts = new Map();
/** Card elements, by attempt id. */
const cards = new Map();
/** Object URLs of files picked in this page, by attempt id. */
const previews = new Map();
/** Attempts whose kept file is being read for a thumbnail. */
const loadingPreview = new Set();

/** @type {Uploader} */
let uploader;

main().catch((err) => {
  console.error(err);
  showMessage(app, "Something went wrong", "The page could not start: " + (err && err.message ? err.message : String(err)), "Reloading the page usually helps.");
  document.body.dataset.error = (err && err.code) || "start";
});

async function main() {
  const p = params();
  const event = p.get("event");
  const guestCode = p.get("code");
  if (!event || !guestCode) {
    const missing = [!event && "event", !guestCode && "code"].filter(Boolean).join(" and ");
    showMessage(
      app,
      "Please use the link from your host",
      `This page needs the guest link the host shared (it is missing the ${missing}).`,
      h("span", {}, "It looks like ", code(`${location.origin}/?event=…&code=…`), "."),
      "Open that link again, or ask the host to send it to you.",
    );
    document.body.dataset.error = "missing_params";
    return;
  }

  await init();
  try {
    uploader = await Uploader.open({ apiBase: apiBase(p), event, guestCode, concurrency: 3 });
  } catch (err) {
    explainOpenError(err, event);
    return;
  }
  window.uploader = uploader;
  const stopRendering = uploader.onChange(render);
  // Forgotten here or in another tab.
  uploader.onRemove((id) => dropCard(id));
  // A first visit joins the event in the background: the title and limits
  // arrive with it, and a wrong guest code is said as soon as it is known
  // (the page is then only that message).
  uploader.onSessionChange((info, error) => {
    if (!error) return showEventInfo(info);
    stopRendering();
    explainOpenError(error, event);
  });
  if (uploader.sessionError) {
    explainOpenError(uploader.sessionError, event);
    return;
  }

  setUpPage();
  const restored = await uploader.restore();
  for (const view of restored) render(view);
  // list() is the full truth (restore() answers with the same records).
  for (const view of uploader.list()) render(view);
  updateSummary();
  document.body.dataset.ready = "1";

  setInterval(() => uploader.refresh(), REFRESH_MS);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") uploader.refresh();
  });
  setInterval(tick, 1000);
}

function explainOpenError(err, event) {
  const reason = (err && err.code) || "unknown";
  document.body.dataset.error = reason;
  const message = err && err.message ? err.message : String(err);
  switch (reason) {
    case "wrong_guest_code":
      showMessage(app, "This link doesn't open the event", `The guest code in this link is not the one for “${event}”.`, "Check that you opened the whole link the host shared, or ask them for it again.");
      break;
    case "not_found":
      showMessage(app, "We couldn't find this event", `There is no event called “${event}” here.`, "Check the link, or ask the host to send it again.");
      break;
    case "storage_unavailable":
    case "quota_exceeded":
      showMessage(app, "This browser can't keep uploads", "The page needs to store your uploads on this device so none is lost, but the browser refused (private browsing can do that).", "Try a normal browser window. Details: " + message);
      break;
    default:
      showMessage(app, "Something went wrong", "The upload page could not start: " + message, "Reloading the page usually helps.");
  }
}

// ---------------------------------------------------------------- page ----

/** The event's title and size limit, once the session brought them. */
function showEventInfo(info) {
  if (!info) return;
  $("event-title").textContent = info.title;
  document.title = `${info.title} · Share your photos`;
  $("limits").textContent = `up to ${formatBytes(info.max_file_bytes)} each`;
}

function setUpPage() {
  $("loading").remove();
  $("guest").hidden = false;
  $("pick-icon").replaceWith(icon(ICONS.upload, 26));
  $("offline-icon").replaceWith(icon(ICONS.offline, 20));

  showEventInfo(uploader.event);

  const input = $("file-input");
  input.addEventListener("change", () => {
    const files = Array.from(input.files || []);
    input.value = "";
    addFiles(files);
  });

  // Drop anywhere on the page; the drop zone lights up.
  const zone = $("dropzone");
  let depth = 0;
  const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes("Files");
  document.addEventListener("dragenter", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth += 1;
    zone.classList.add("is-over");
  });
  document.addEventListener("dragleave", (e) => {
    if (!hasFiles(e)) return;
    depth = Math.max(0, depth - 1);
    if (depth === 0) zone.classList.remove("is-over");
  });
  document.addEventListener("dragover", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "copy";
  });
  document.addEventListener("drop", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth = 0;
    zone.classList.remove("is-over");
    addFiles(Array.from(e.dataTransfer.files || []));
  });

  const updateOnline = () => {
    $("offline-banner").hidden = navigator.onLine !== false;
    for (const view of attempts.values()) render(view);
  };
  window.addEventListener("online", updateOnline);
  window.addEventListener("offline", updateOnline);
  updateOnline();

  // Attempt records that cannot be saved (quota, a newer version of the app
  // in another tab): the uploads wait, and the guest is told why.
  const showStorageError = (error) => {
    $("storage-banner").hidden = !error;
    $("storage-reason").textContent = error ? error.message : "";
  };
  uploader.onStorageError(showStorageError);
  showStorageError(uploader.storageError);

  watchPersistence();
}

/** `uploader.persisted` is null until the browser answers; it has no event. */
function watchPersistence() {
  const el = $("persisted");
  const started = Date.now();
  const show = () => {
    const persisted = uploader.persisted;
    el.dataset.persisted = String(persisted);
    if (persisted === true) {
      el.textContent = "This browser agreed to keep unfinished uploads safe on this device.";
      return true;
    }
    if (persisted === false) {
      el.textContent = "This browser may clear unfinished uploads if it runs low on space, so keep this page open until everything says Saved.";
      return true;
    }
    if (Date.now() - started > 10_000) {
      el.textContent = "This browser didn't say whether it keeps unfinished uploads safe.";
    }
    return false;
  };
  if (show()) return;
  const timer = setInterval(() => {
    if (show()) clearInterval(timer);
  }, 500);
}

// ------------------------------------------------------------- adding ----

/**
 * Adds files. `target` is the attempt a "pick again" button was for: a file
 * that matches it is re-attached by the uploader itself.
 */
async function addFiles(files, target = null) {
  if (!files.length) return;
  let outcomes;
  try {
    outcomes = await uploader.add(files);
  } catch (err) {
    const names = files.map((f) => f.name).join(", ");
    addRefusal(names, err && err.message ? err.message : String(err));
    return;
  }
  outcomes.forEach((outcome, i) => {
    const file = files[i];
    if (!outcome.ok) {
      addRefusal(outcome.fileName, outcome.error.message);
      return;
    }
    const view = outcome.attempt;
    if (!view) return;
    if (file && (!previews.has(view.id) || outcome.status === "reattached")) setPreview(view.id, file);
    render(view);
    if (outcome.status === "duplicate") {
      addNotice(`“${view.fileName}” is already here`, "The same file was picked again; it is uploaded only once.");
      flash(view.id);
    } else if (target && outcome.status === "new" && view.id !== target.id) {
      const old = attempts.get(target.id);
      if (old && old.confirmation === "expired") {
        // The expired attempt is continued by this new one.
        forget(old.id);
      } else {
        addNotice(`“${view.fileName}” was added as a new upload`, `It isn't the same file as “${target.fileName}”, which still needs its file.`);
      }
    }
  });
  updateSummary();
}

function setPreview(id, file) {
  const old = previews.get(id);
  if (old) URL.revokeObjectURL(old.url);
  previews.set(id, { url: URL.createObjectURL(file), type: file.type });
}

function addRefusal(fileName, message) {
  const li = h(
    "li",
    { class: "note", "data-testid": "refusal", role: "alert" },
    h("span", { class: "note-text" }, h("strong", { text: fileName || "Some files" }), "Couldn't add it: " + message),
    h("button", { class: "dismiss", type: "button", "aria-label": "Dismiss", "data-testid": "dismiss", onclick: () => li.remove() }, "×"),
  );
  li.dataset.filename = fileName || "";
  $("notes").append(li);
}

function addNotice(title, text) {
  const li = h(
    "li",
    { class: "note note--info", "data-testid": "notice" },
    h("span", { class: "note-text" }, h("strong", { text: title }), text),
    h("button", { class: "dismiss", type: "button", "aria-label": "Dismiss", onclick: () => li.remove() }, "×"),
  );
  $("notes").append(li);
  setTimeout(() => li.remove(), NOTICE_MS);
}

function flash(id) {
  const card = cards.get(id);
  if (!card) return;
  card.root.classList.remove("is-flash");
  void card.root.offsetWidth;
  card.root.classList.add("is-flash");
  card.root.scrollIntoView({ block: "nearest", behavior: "smooth" });
}

async function forget(id) {
  try {
    await uploader.forget(id);
  } catch (err) {
    console.warn("forget failed", err);
  }
  dropCard(id);
}

/** Forgets a card and its preview. */
function dropCard(id) {
  if (!attempts.has(id)) return;
  attempts.delete(id);
  removeCard(id);
  const preview = previews.get(id);
  if (preview && ![...attempts.values()].some((a) => a.replaces === id)) URL.revokeObjectURL(preview.url);
  previews.delete(id);
  updateSummary();
}

// ------------------------------------------------------------ rendering ----

function removeCard(id) {
  const card = cards.get(id);
  if (card) card.root.remove();
  cards.delete(id);
}

/** Renders one attempt (creates its card the first time). */
function render(view) {
  if (!view || !view.id) return;
  attempts.set(view.id, view);

  // An expired attempt continued by a new one: show only the new one.
  if (view.replacedBy && attempts.has(view.replacedBy)) {
    const old = previews.get(view.id);
    if (old && !previews.has(view.replacedBy)) previews.set(view.replacedBy, old);
    removeCard(view.id);
    updateSummary();
    return;
  }
  if (view.replaces) {
    const old = previews.get(view.replaces);
    if (old && !previews.has(view.id)) previews.set(view.id, old);
    if (cards.has(view.replaces)) removeCard(view.replaces);
  }

  let card = cards.get(view.id);
  if (!card) {
    card = createCard(view);
    cards.set(view.id, card);
    insertInOrder(card.root, view);
    updateSummary();
  }
  fillCard(card, view);
}

/**
 * Newest first. Files added together share a `createdAt`, and `list()` does
 * not keep their order across a reload, so they are ordered by name.
 */
function before(a, b) {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  return a.fileName.localeCompare(b.fileName) < 0;
}

function insertInOrder(node, view) {
  const list = $("cards");
  for (const other of list.children) {
    const o = attempts.get(other.dataset.id);
    if (o && before(view, o)) {
      list.insertBefore(node, other);
      return;
    }
  }
  list.append(node);
}

function createCard(view) {
  const refs = {};
  refs.thumb = h("div", { class: "thumb" });
  refs.size = h("span", { class: "size" });
  refs.bar = h("div", { class: "progress-bar" });
  refs.progress = h(
    "div",
    { class: "progress", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": "0", "data-testid": "progress", "aria-label": "Upload progress" },
    refs.bar,
  );
  refs.transfer = h("li", { class: "state", "data-testid": "transfer" });
  refs.confirmation = h("li", { class: "state", "data-testid": "confirmation" });
  refs.moderation = h("li", { class: "state", "data-testid": "moderation" });
  refs.note = h("p", { class: "card-note", "data-testid": "note" });
  refs.slot = h("div", { class: "card-extra" });
  refs.actions = h("div", { class: "actions" });
  refs.root = h(
    "li",
    { class: "card", "data-testid": "card", dataset: { id: view.id, filename: view.fileName } },
    refs.thumb,
    h(
      "div",
      { class: "card-body" },
      h("div", { class: "card-head" }, h("span", { class: "filename", title: view.fileName, text: view.fileName }), refs.size),
      refs.progress,
      h("ul", { class: "states" }, refs.transfer, refs.confirmation, refs.moderation),
      refs.note,
      refs.slot,
      refs.actions,
    ),
  );
  refs.thumbKey = null;
  refs.extraKey = null;
  return refs;
}

function setState(el, text, tone) {
  el.textContent = text;
  el.hidden = !text;
  el.className = "state" + (tone ? ` state--${tone}` : "");
}

function kindWord(view) {
  return isVideo(view.type) ? "video" : "photo";
}

/** A short reason for a scheduled retry. */
function shortReason(error) {
  if (!error) return "";
  const code = String(error.code || "");
  if (code === "network") return "connection lost";
  if (code === "rate_limited" || code === "http_429") return "server busy";
  if (code === "url_expired" || code === "expired") return "link expired";
  if (code === "object_store_unavailable" || code === "database_unavailable" || code === "internal" || /^http_5\d\d$/.test(code)) return "server problem";
  const m = String(error.message || code);
  return m.length > 40 ? m.slice(0, 39) + "…" : m;
}

function capitalize(s) {
  return s ? s.charAt(0).toUpperCase() + s.slice(1) : s;
}

function fillCard(card, view) {
  const root = card.root;
  root.dataset.transfer = view.transfer;
  root.dataset.confirmation = view.confirmation;
  root.dataset.moderation = view.moderation;
  root.dataset.terminal = String(view.terminal);
  card.size.textContent = formatBytes(view.size);

  // Thumbnail: the picked file, else the stored media, else an icon.
  const preview = previews.get(view.id);
  let src = null;
  let type = view.type;
  if (preview) {
    src = preview.url;
    type = preview.type || view.type;
  } else if (view.media && view.media.url) {
    src = view.media.url;
  } else if (view.fileHeld && !loadingPreview.has(view.id)) {
    // After a reload: the file kept in IndexedDB makes the thumbnail.
    loadingPreview.add(view.id);
    uploader.file(view.id).then((blob) => {
      if (blob && !previews.has(view.id)) {
        previews.set(view.id, { url: URL.createObjectURL(blob), type: view.type });
        const latest = attempts.get(view.id);
        const c = cards.get(view.id);
        if (latest && c) fillCard(c, latest);
      }
    }, () => {});
  }
  const thumbKey = src ? `${src}|${type}` : `icon|${kindWord(view)}`;
  if (card.thumbKey !== thumbKey) {
    card.thumbKey = thumbKey;
    card.thumb.replaceChildren(...thumbnail(src, type, view));
  }

  // Progress.
  const total = view.bytesTotal || view.size || 0;
  const sent = view.transfer === "uploaded" ? total : Math.min(view.bytesSent || 0, total);
  const pct = total > 0 ? Math.floor((sent / total) * 100) : view.transfer === "uploaded" ? 100 : 0;
  card.bar.style.width = `${pct}%`;
  card.progress.setAttribute("aria-valuenow", String(pct));
  card.progress.classList.toggle("is-done", view.transfer === "uploaded");
  card.progress.classList.toggle("is-failed", view.transfer === "failed");

  // Transfer.
  switch (view.transfer) {
    case "queued":
      // A large file that goes on from the parts the server holds says so.
      setState(card.transfer, view.partsDone ? `Waiting to go on (${view.partsDone} of ${view.partCount} parts stored)` : "Waiting to upload", "");
      break;
    case "uploading":
      setState(card.transfer, view.partCount ? `Uploading ${pct}% (${view.partsDone} of ${view.partCount} parts)` : `Uploading ${pct}%`, "active");
      break;
    case "uploaded":
      setState(card.transfer, "Uploaded", "ok");
      break;
    case "needs_file":
      setState(card.transfer, `Needs the ${kindWord(view)} again`, "wait");
      break;
    case "failed":
      setState(card.transfer, "Not uploaded", "bad");
      break;
    default:
      setState(card.transfer, view.transfer, "");
  }

  // Confirmation.
  switch (view.confirmation) {
    case "confirming":
      setState(card.confirmation, "Saving…", "active");
      break;
    case "confirmed":
      setState(card.confirmation, "Saved", "ok");
      break;
    case "rejected":
      setState(card.confirmation, "Not saved", "bad");
      break;
    case "failed":
      setState(card.confirmation, "Not saved yet", "bad");
      break;
    case "expired":
      setState(card.confirmation, view.replacedBy ? "Expired, started again" : "Expired", "bad");
      break;
    default:
      setState(card.confirmation, "", "");
  }

  // Moderation.
  const reason = view.media && view.media.reason;
  switch (view.moderation) {
    case "pending":
      setState(card.moderation, "Waiting for the host's approval", "wait");
      break;
    case "approved":
      setState(card.moderation, "On the wall", "ok");
      break;
    case "rejected":
      setState(card.moderation, reason ? `Not accepted: ${reason}` : "Not accepted by the host", "bad");
      break;
    default:
      setState(card.moderation, "", "");
  }

  // A one-line note: a scheduled retry, a pause, another tab.
  card.note.textContent = noteFor(view);
  card.note.hidden = !card.note.textContent;
  card.note.className = "card-note" + (view.error && !view.terminal ? " card-note--wait" : "");

  // Error, pick-again prompt and actions.
  fillExtra(card, view);
}

function noteFor(view) {
  if (view.terminal) return "";
  if (view.transfer === "needs_file") return "";
  if (view.error && view.nextRetryAt) {
    const s = Math.max(0, Math.ceil((view.nextRetryAt - Date.now()) / 1000));
    return `Retrying in ${s} s (${shortReason(view.error)})`;
  }
  if (navigator.onLine === false) return "Paused: continues when you're back online.";
  if (!view.drivenHere) return "Being uploaded by another tab of this browser.";
  if (view.error) return `Trying again (${shortReason(view.error)})`;
  return "";
}

function fillExtra(card, view) {
  // A failure shows on its own axis: the upload, or the saving after it.
  const canRetry = (view.transfer === "failed" && view.confirmation === "unconfirmed") || view.confirmation === "failed";
  const expiredAlone = view.confirmation === "expired" && !view.replacedBy;
  const needsFile = view.transfer === "needs_file";
  let errorText = "";
  if (view.transfer === "failed" && view.error) errorText = `Couldn't upload: ${view.error.message}`;
  else if (view.confirmation === "failed" && view.error) errorText = `Uploaded, but couldn't save it: ${view.error.message}`;
  else if (view.confirmation === "rejected") errorText = `Couldn't save: ${view.error ? view.error.message : "the server refused it"}`;
  else if (expiredAlone) errorText = `Couldn't save: ${view.error ? view.error.message : "it expired"}`;
  const canForget = canRetry || needsFile || view.confirmation === "rejected" || expiredAlone;

  const key = [errorText, canRetry, needsFile, expiredAlone, canForget, view.type].join("|");
  if (card.extraKey === key) return;
  card.extraKey = key;

  const parts = [];
  if (errorText) parts.push(h("p", { class: "card-error", "data-testid": "error", role: "alert", text: capitalize(errorText) }));
  if (needsFile || expiredAlone) {
    const word = kindWord(view);
    const input = h("input", { class: "visually-hidden", type: "file", accept: view.type || "image/*,video/*" });
    input.addEventListener("change", () => {
      const files = Array.from(input.files || []);
      input.value = "";
      addFiles(files, view);
    });
    parts.push(
      h(
        "div",
        { class: "pick-again-box" },
        h("p", { text: needsFile ? `Please pick this ${word} again` : `Pick this ${word} again to upload it` }),
        h(
          "p",
          { class: "pick-again-help" },
          needsFile ? "This browser no longer has the file, so it can't finish the upload by itself." : "Its upload link ran out before it was saved.",
        ),
        h("label", { class: "button button--primary button--small", "data-testid": "pick-again" }, input, `Pick the ${word}`),
      ),
    );
  }
  card.slot.replaceChildren(...parts);

  const actions = [];
  if (canRetry) {
    const button = h("button", { class: "button button--primary button--small", type: "button", "data-testid": "retry" }, "Retry");
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await uploader.retry(view.id);
      } catch (err) {
        console.warn("retry failed", err);
      }
      button.disabled = false;
    });
    actions.push(button);
  }
  if (canForget) {
    const button = h("button", { class: "button button--quiet button--small", type: "button", "data-testid": "forget" }, "Remove");
    button.addEventListener("click", () => {
      button.disabled = true;
      forget(view.id);
    });
    actions.push(button);
  }
  card.actions.replaceChildren(...actions);
}

function thumbnail(src, type, view) {
  if (!src) {
    return [icon(isVideo(type) ? ICONS.video : ICONS.photo, 30)];
  }
  const fallback = (el) =>
    el.addEventListener("error", () => el.replaceWith(icon(isVideo(type) ? ICONS.video : ICONS.photo, 30)), { once: true });
  if (isVideo(type)) {
    // The first frame: metadata plus a tiny seek.
    const video = h("video", { muted: true, playsinline: true, preload: "metadata", "aria-hidden": "true" });
    video.muted = true;
    video.src = src.startsWith("blob:") ? `${src}#t=0.1` : src;
    fallback(video);
    return [video, h("span", { class: "kind", text: "Video" })];
  }
  const img = h("img", { alt: "", loading: "lazy", decoding: "async", src });
  fallback(img);
  return [img];
}

function updateSummary() {
  const shown = [...cards.keys()].map((id) => attempts.get(id)).filter(Boolean);
  $("empty").hidden = shown.length > 0;
  const title = $("uploads-title");
  title.hidden = shown.length === 0;
  const saved = shown.filter((a) => a.confirmation === "confirmed").length;
  title.textContent = shown.length ? `Your uploads · ${saved} of ${shown.length} saved` : "Your uploads";
}

/** Once a second: the "Retrying in N s" countdowns, and the summary. */
function tick() {
  for (const view of attempts.values()) {
    if (view.nextRetryAt && !view.terminal) {
      const card = cards.get(view.id);
      if (card) {
        card.note.textContent = noteFor(view);
        card.note.hidden = !card.note.textContent;
      }
    }
  }
  updateSummary();
}
