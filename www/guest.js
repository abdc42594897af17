// The guest page: pick photos and videos, see where each one stands.
//
// Every card shows the three states of an attempt apart — the transfer of
// the bytes, the confirmation of the media record, the host's moderation —
// plus progress, the last error and what the guest can do about it. Each
// action's wording says what happens to the file.
//
// Strings come from the page's language table (www/i18n.js). Progress is
// said to screen readers politely, in one log region, at milestones only
// (started, each quarter, saved, failed): see `announce`.

import { h, icon, ICONS, params, apiBase, showMessage, code, isVideo } from "./common.js";
import { t, translatePage, formatBytes, formatPercent, inSeconds } from "./i18n.js";

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
/** What was last said about each attempt (see `announce`), by id. */
const spoken = new Map();
/** Lines kept in the log region; older ones are dropped. */
const ANNOUNCER_LINES = 20;

/** The package's `handOver` and `takeBack` (uploads that outlive the tab), once it is loaded. */
let background = null;
/** @type {import("/pkg/upload_once.js").Uploader} */
let uploader;
/**
 * Files picked before the uploader was open (a first visit on a slow
 * network: the pick button works once this script has run, while the
 * `.wasm` may still be on its way), as `{ files, target }`: each batch is
 * given to `add()` once the uploader opens, in the order picked.
 */
const waiting = [];
/**
 * Aborted once the page is only a message (the uploader could not open, or
 * the event refused this guest): the page's own listeners (pick, drop,
 * online) and the uploader's go with it, and nothing more is added, queued
 * or said.
 */
const pageListeners = new AbortController();
const closed = () => pageListeners.signal.aborted;

translatePage();
document.title = t("guest.docTitle");

main().catch((err) => {
  console.error(err);
  showMessage(app, t("common.somethingWrong"), t("guest.startFailed", { message: err && err.message ? err.message : String(err) }), t("common.reloadHelps"));
  document.body.dataset.error = (err && err.code) || "start";
});

/** "It looks like <code>link</code>." in the page's language. */
function looksLike(link) {
  const [before, after] = t("common.looksLike").split("{link}");
  return h("span", {}, before, code(link), after);
}

async function main() {
  const p = params();
  const event = p.get("event");
  const guestCode = p.get("code");
  if (!event || !guestCode) {
    const missing = [!event && "event", !guestCode && "code"].filter(Boolean).join(", ");
    showMessage(
      app,
      t("guest.missing.title"),
      t("guest.missing.text", { missing }),
      looksLike(`${location.origin}/?event=…&code=…`),
      t("guest.missing.ask"),
    );
    document.body.dataset.error = "missing_params";
    return;
  }

  const api = apiBase(p);
  if (api.refused) {
    showMessage(app, t("common.api.title"), t("common.api.text", { origin: api.refused }), t("common.api.ask"));
    document.body.dataset.error = "api_not_allowed";
    return;
  }

  // The package (its JS, preloaded with the page, then its `.wasm`) loads
  // and the uploader opens while the page comes up: the pick button waits
  // for neither, not even for the package's JS to be compiled and run.
  const opening = import("/pkg/upload_once.js").then(async ({ default: init, Uploader, handOver, takeBack }) => {
    await init();
    background = { handOver, takeBack };
    return Uploader.open({ apiBase: api.base, event, guestCode, concurrency: 3 });
  });
  setUpPage();
  // The pick button works from here (cargo xtask bench times navigation to
  // it); what is picked before the uploader is open waits in `waiting`.
  performance.mark("upload-once:usable");
  try {
    uploader = await opening;
  } catch (err) {
    explainOpenError(err, event);
    return;
  }
  window.uploader = uploader;
  const stopRendering = uploader.onChange(render);
  // Forgotten here or in another tab.
  const stopRemoving = uploader.onRemove((id) => dropCard(id));
  // The page that is only a message hears nothing more from the uploader.
  pageListeners.signal.addEventListener("abort", () => {
    stopRendering();
    stopRemoving();
  });
  // A first visit joins the event in the background: the title and limits
  // arrive with it, and a wrong guest code is said as soon as it is known
  // (the page is then only that message).
  let refused = false;
  uploader.onSessionChange((info, error) => {
    if (!error) return showEventInfo(info);
    refused = true;
    explainOpenError(error, event);
  });
  if (uploader.sessionError) {
    explainOpenError(uploader.sessionError, event);
    return;
  }

  setUpUploader();
  // The uploader is open: what was picked meanwhile goes to it.
  performance.mark("upload-once:ready");
  addWaiting();
  const restored = await uploader.restore();
  // The join was refused meanwhile: the page is that message alone.
  if (refused) return;
  for (const view of restored) render(view);
  // list() is the full truth (restore() answers with the same records).
  for (const view of uploader.list()) render(view);
  updateSummary();
  document.body.dataset.ready = "1";
  registerServiceWorker();
  keepGoingInTheBackground();
  takeSharedFiles();

  setInterval(() => uploader.refresh(), REFRESH_MS);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") uploader.refresh();
  });
  setInterval(tick, 1000);
}

/**
 * Files shared to the installed app from the gallery (www/sw.js kept them
 * under `?share=<id>`). Any site can send a browser to this origin with a
 * POST like a share, so nothing goes up until the guest says so: a notice
 * names how many files came, with Add (they go to `add` as if picked: the
 * same write-ahead record, the same dedup) and Discard. Either way they
 * leave the worker's cache and `share` leaves the address.
 */
async function takeSharedFiles() {
  const id = params().get("share");
  if (!id || !("caches" in window)) return;
  const cache = await caches.open("upload-once-shared");
  const prefix = `/__upload-once/share/${id}/`;
  const index = (request) => Number(new URL(request.url).pathname.slice(prefix.length));
  const keys = (await cache.keys())
    .filter((request) => new URL(request.url).pathname.startsWith(prefix))
    .sort((a, b) => index(a) - index(b));
  const files = [];
  for (const key of keys) {
    const response = await cache.match(key);
    if (!response) continue;
    const blob = await response.blob();
    const name = decodeURIComponent(response.headers.get("x-name") || "shared");
    const lastModified = Number(response.headers.get("x-last-modified")) || Date.now();
    files.push(new File([blob], name, { type: blob.type, lastModified }));
  }
  const done = async (add) => {
    li.remove();
    if (add && files.length) await addFiles(files);
    for (const key of keys) await cache.delete(key);
    const url = new URL(location.href);
    url.searchParams.delete("share");
    history.replaceState(history.state, "", url);
    document.body.dataset.share = add ? "added" : "discarded";
  };
  const li = h(
    "li",
    { class: "note note--info note--share", "data-testid": "shared-files", role: "status" },
    h("span", { class: "note-text" }, h("strong", { text: t("guest.share.title", { count: files.length }) }), t("guest.share.text")),
    h(
      "span",
      { class: "share-actions" },
      h("button", { class: "button button--small", type: "button", "data-testid": "shared-add", onclick: () => done(true) }, t("guest.share.add")),
      h("button", { class: "button button--small button--quiet", type: "button", "data-testid": "shared-discard", onclick: () => done(false) }, t("guest.share.discard")),
    ),
  );
  $("notes").append(li);
  document.body.dataset.share = "asking";
}

/**
 * Registers the service worker that keeps this page and the package for the
 * next visit (www/sw.js): only now, so its download and its caching never
 * compete with the page's own start. A browser without service workers, or
 * a server without `/sw.js`, loads the page from the network each time.
 */
function registerServiceWorker() {
  if (!("serviceWorker" in navigator)) return;
  // Where the browser has Background Fetch (Chromium), the worker is a
  // module that also loads the package: it confirms the uploads this page
  // hands over when it is hidden (www/sw-background.js imports www/sw.js).
  const options = BACKGROUND_FETCH ? { scope: "/", type: "module" } : { scope: "/" };
  navigator.serviceWorker
    .register(BACKGROUND_FETCH ? "/sw-background.js" : "/sw.js", options)
    .catch((err) => console.warn("no service worker:", err));
}

/** Whether this browser can send uploads after the tab is closed. */
const BACKGROUND_FETCH = "BackgroundFetchManager" in self && "serviceWorker" in navigator;
/**
 * How long the page stays hidden before it hands its uploads to the
 * browser: a glance at another app does not restart what is on the wire.
 */
const HAND_OVER_AFTER_MS = 3_000;

/**
 * Uploads that outlive the tab (issue 33). While this page is hidden (the
 * phone locked, another app, the tab switcher, where the guest may close
 * it), what is left to send in one PUT goes to a Background Fetch: the
 * browser sends it, shows it in its download UI, and the service worker
 * confirms each file (`settleBackgroundFetch`). When the page is seen again
 * it takes everything back (`takeBack`), as it does when it opens: the
 * server says what became of each. Without the API (Firefox, Safari) the
 * page goes on while the browser lets it, and the next visit resumes.
 */
async function keepGoingInTheBackground() {
  if (!BACKGROUND_FETCH) return;
  let registration;
  try {
    registration = await navigator.serviceWorker.ready;
  } catch {
    return;
  }
  let timer = null;
  let handing = Promise.resolve();
  const takeBack = async () => {
    await handing;
    document.body.dataset.background = "taking-back";
    try {
      await background.takeBack(uploader, registration);
    } catch (err) {
      console.warn("upload-once: could not take the uploads back:", err && err.message);
    }
    document.body.dataset.background = "here";
  };
  const handOver = () => {
    timer = null;
    if (document.visibilityState !== "hidden" || !uploader.busy) return;
    const title = t("guest.background.title", { event: (uploader.event && uploader.event.title) || "" });
    handing = background
      .handOver(uploader, registration, title)
      .then((ids) => {
        if (ids.length) document.body.dataset.background = `handed:${ids.length}`;
      })
      .catch((err) => console.warn("upload-once: could not hand the uploads over:", err && err.message));
  };
  await takeBack();
  document.addEventListener(
    "visibilitychange",
    () => {
      if (document.visibilityState === "hidden") {
        if (timer === null) timer = setTimeout(handOver, HAND_OVER_AFTER_MS);
        return;
      }
      if (timer !== null) clearTimeout(timer);
      timer = null;
      takeBack();
    },
    { signal: pageListeners.signal },
  );
}

function explainOpenError(err, event) {
  // Files picked meanwhile were neither recorded nor sent: the page is now
  // the message alone, and takes no more.
  pageListeners.abort();
  waiting.length = 0;
  showWaiting();
  const reason = (err && err.code) || "unknown";
  document.body.dataset.error = reason;
  const message = err && err.message ? err.message : String(err);
  switch (reason) {
    case "wrong_guest_code":
      showMessage(app, t("guest.wrongCode.title"), t("guest.wrongCode.text", { event }), t("guest.wrongCode.ask"));
      break;
    case "not_found":
      showMessage(app, t("guest.notFound.title"), t("guest.notFound.text", { event }), t("guest.notFound.ask"));
      break;
    case "session_revoked":
    case "address_blocked":
      showMessage(app, t("guest.removed.title"), t("guest.removed.text", { event }), t("guest.removed.ask"));
      break;
    case "storage_unavailable":
    case "quota_exceeded":
      showMessage(app, t("guest.noStorage.title"), t("guest.noStorage.text"), t("guest.noStorage.ask", { message }));
      break;
    default:
      showMessage(app, t("common.somethingWrong"), t("guest.startFailed", { message }), t("common.reloadHelps"));
  }
}

// ---------------------------------------------------------------- page ----

/** The event's title and size limit, once the session brought them. */
function showEventInfo(info) {
  if (!info) return;
  $("event-title").textContent = info.title;
  document.title = t("guest.docTitleEvent", { title: info.title });
  $("limits").textContent = t("guest.limit", { size: formatBytes(info.max_file_bytes) });
}

/** The page and its pick button, before the uploader is open. */
function setUpPage() {
  const { signal } = pageListeners;
  $("loading").remove();
  $("guest").hidden = false;
  $("pick-icon").replaceWith(icon(ICONS.upload, 26));
  $("offline-icon").replaceWith(icon(ICONS.offline, 20));

  const input = $("file-input");
  input.addEventListener("change", () => {
    const files = Array.from(input.files || []);
    input.value = "";
    addFiles(files);
  }, { signal });

  // Drop anywhere on the page; the drop zone lights up.
  const zone = $("dropzone");
  let depth = 0;
  const hasFiles = (e) => e.dataTransfer && Array.from(e.dataTransfer.types || []).includes("Files");
  document.addEventListener("dragenter", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth += 1;
    zone.classList.add("is-over");
  }, { signal });
  document.addEventListener("dragleave", (e) => {
    if (!hasFiles(e)) return;
    depth = Math.max(0, depth - 1);
    if (depth === 0) zone.classList.remove("is-over");
  }, { signal });
  document.addEventListener("dragover", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "copy";
  }, { signal });
  document.addEventListener("drop", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    depth = 0;
    zone.classList.remove("is-over");
    addFiles(Array.from(e.dataTransfer.files || []));
  }, { signal });

  const updateOnline = () => {
    $("offline-banner").hidden = navigator.onLine !== false;
    for (const view of attempts.values()) render(view);
  };
  window.addEventListener("online", updateOnline, { signal });
  window.addEventListener("offline", updateOnline, { signal });
  updateOnline();
}

/**
 * A reload or a closed tab forgets files not yet given to the uploader
 * (nothing of them was recorded or sent): while any wait, the browser asks
 * first. The listener is there only then (it keeps a page out of the
 * back/forward cache).
 */
function warnBeforeUnload(e) {
  e.preventDefault();
  e.returnValue = "";
}

/** What needs the open uploader: the event's details, storage, persistence. */
function setUpUploader() {
  showEventInfo(uploader.event);

  // Attempt records that cannot be saved (quota, a newer version of the app
  // in another tab): the uploads wait, and the guest is told why.
  const showStorageError = (error) => {
    $("storage-banner").hidden = !error;
    const reason = error ? t(`guest.storage.${error.code}`) : "";
    $("storage-text").textContent = error ? t("guest.storageBanner", { reason: reason.startsWith("guest.") ? error.message : reason }) : "";
  };
  uploader.onStorageError(showStorageError);
  showStorageError(uploader.storageError);

  watchPersistence();
  keepTheScreenOn();
}

// ------------------------------------------------------- screen on ----

/** The guest's choice, kept across visits ("off" once they turned it off). */
const WAKE_CHOICE = "upload-once:keep-screen-on";

/**
 * Holds a Screen Wake Lock while the uploader is busy (files going up,
 * confirms, retries waiting their turn), with the guest's consent: the
 * toggle, on unless they turned it off. The browser releases the lock when
 * the page is hidden; it is asked for again when the page is shown, and
 * given back when nothing is left to send. `body[data-wake-lock]` says
 * where it stands: `unsupported`, `off`, `idle`, `held`, `refused`.
 */
function keepTheScreenOn() {
  const box = $("wake");
  if (!("wakeLock" in navigator)) {
    document.body.dataset.wakeLock = "unsupported";
    return;
  }
  box.hidden = false;
  const toggle = $("wake-toggle");
  const note = $("wake-note");
  let sentinel = null;
  let asking = false;
  const stored = () => {
    try {
      return localStorage.getItem(WAKE_CHOICE);
    } catch {
      return null;
    }
  };
  toggle.checked = stored() !== "off";
  const wanted = () => !closed() && uploader.busy && toggle.checked && document.visibilityState === "visible";
  const show = (state) => {
    document.body.dataset.wakeLock = state;
    note.textContent = state === "refused" ? t("guest.wake.refused") : "";
  };
  const sync = async () => {
    if (!wanted()) {
      const held = sentinel;
      sentinel = null;
      if (held) await held.release().catch(() => {});
      if (!asking) show(toggle.checked ? "idle" : "off");
      return;
    }
    if (sentinel || asking) return;
    asking = true;
    try {
      const lock = await navigator.wakeLock.request("screen");
      sentinel = lock;
      // The browser lets go by itself when the page is hidden.
      lock.addEventListener("release", () => {
        if (sentinel !== lock) return;
        sentinel = null;
        show("idle");
      });
      show("held");
    } catch (err) {
      // Refused (no permission, a hidden page, a battery saver): the
      // uploads go on; the guest is told to keep the phone awake.
      console.warn("upload-once: the screen may sleep:", err && err.name);
      show("refused");
    } finally {
      asking = false;
    }
    // Things may have changed while the browser answered.
    if (!wanted() && sentinel) sync();
  };
  toggle.addEventListener("change", () => {
    try {
      if (toggle.checked) localStorage.removeItem(WAKE_CHOICE);
      else localStorage.setItem(WAKE_CHOICE, "off");
    } catch {
      // Private mode without storage: the choice lasts this visit.
    }
    sync();
  }, { signal: pageListeners.signal });
  const stopBusy = uploader.onBusyChange(() => sync());
  pageListeners.signal.addEventListener("abort", () => {
    stopBusy();
    sync();
  });
  document.addEventListener("visibilitychange", () => sync(), { signal: pageListeners.signal });
  sync();
}

/** `uploader.persisted` is null until the browser answers; it has no event. */
function watchPersistence() {
  const el = $("persisted");
  const started = Date.now();
  const show = () => {
    const persisted = uploader.persisted;
    el.dataset.persisted = String(persisted);
    if (persisted === true) {
      el.textContent = t("guest.persist.yes");
      return true;
    }
    if (persisted === false) {
      el.textContent = t("guest.persist.no");
      return true;
    }
    if (Date.now() - started > 10_000) {
      el.textContent = t("guest.persist.unknown");
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
  if (!files.length || closed()) return;
  // Before the uploader is open, and while what was picked then is given to
  // it, files wait their turn: they are added in the order picked.
  if (!uploader || waiting.length) {
    waiting.push({ files, target });
    showWaiting();
    return;
  }
  await giveFiles(files, target);
}

/** Gives files to the open uploader and shows what became of each. */
async function giveFiles(files, target = null) {
  let outcomes;
  try {
    outcomes = await uploader.add(files);
  } catch (err) {
    if (closed()) return;
    const names = files.map((f) => f.name).join(", ");
    addRefusal(names, refusalReason(err, files.length === 1 ? files[0] : null));
    return;
  }
  if (closed()) return;
  outcomes.forEach((outcome, i) => {
    const file = files[i];
    if (!outcome.ok) {
      addRefusal(outcome.fileName, refusalReason(outcome.error, file));
      return;
    }
    const view = outcome.attempt;
    if (!view) return;
    if (file && (!previews.has(view.id) || outcome.status === "reattached")) setPreview(view.id, file);
    render(view);
    if (outcome.status === "duplicate") {
      addNotice(t("guest.duplicate.title", { name: view.fileName }), t("guest.duplicate.text"));
      flash(view.id);
    } else if (outcome.status === "not_same_file") {
      // Same name, size and date as a file an upload waits for, other bytes.
      addNotice(t("guest.notSameFile.title", { name: view.fileName }), t("guest.notSameFile.text", { name: view.fileName }));
    } else if (target && outcome.status === "new" && view.id !== target.id) {
      const old = attempts.get(target.id);
      if (old && old.confirmation === "expired") {
        // The expired attempt is continued by this new one.
        forget(old.id);
      } else {
        addNotice(t("guest.addedNew.title", { name: view.fileName }), t("guest.addedNew.text", { other: target.fileName }));
      }
    }
  });
  updateSummary();
}

/** Says how many picked files wait for the uploader to open (or nothing). */
function showWaiting() {
  const count = waiting.reduce((n, batch) => n + batch.files.length, 0);
  let note = $("waiting");
  if (!count) {
    window.removeEventListener("beforeunload", warnBeforeUnload);
    if (note) note.remove();
    return;
  }
  window.addEventListener("beforeunload", warnBeforeUnload);
  if (!note) {
    // #notes is a live region: the count is read out as it changes.
    note = h("li", { class: "note note--info", id: "waiting", "data-testid": "waiting" }, h("span", { class: "note-text" }));
    $("notes").append(note);
  }
  note.firstChild.textContent = t("guest.waiting", { count });
}

/** Gives the files picked before the uploader opened to it, in order. */
async function addWaiting() {
  while (waiting.length && !closed()) {
    const { files, target } = waiting[0];
    try {
      await giveFiles(files, target);
    } catch (err) {
      // One batch that fails to show must not hold the ones after it.
      console.error(err);
    } finally {
      waiting.shift();
      showWaiting();
    }
  }
}

function setPreview(id, file) {
  const old = previews.get(id);
  if (old) URL.revokeObjectURL(old.url);
  previews.set(id, { url: URL.createObjectURL(file), type: file.type });
}

/**
 * Why a file was not added, in the page's language: the codes the page can
 * say itself, else the uploader's own message.
 */
function refusalReason(error, file) {
  const codeOf = (error && error.code) || "";
  const limit = uploader && uploader.event ? uploader.event.max_file_bytes : null;
  switch (codeOf) {
    case "file_too_large":
      if (file && limit) return t("guest.refuse.file_too_large", { size: formatBytes(file.size), limit: formatBytes(limit) });
      break;
    case "type_not_allowed":
      return t("guest.refuse.type_not_allowed", { type: (file && file.type) || "?" });
    case "empty_file":
    case "invalid_filename":
    case "wrong_guest_code":
    case "quota_exceeded":
    case "storage_unavailable":
      return t(`guest.refuse.${codeOf}`);
  }
  return error && error.message ? error.message : String(error);
}

function addRefusal(fileName, reason) {
  if (closed()) return;
  const li = h(
    "li",
    { class: "note", "data-testid": "refusal", role: "alert" },
    h("span", { class: "note-text" }, h("strong", { text: fileName || t("guest.someFiles") }), t("guest.refused", { reason })),
    h("button", { class: "dismiss", type: "button", "aria-label": t("common.dismiss"), "data-testid": "dismiss", onclick: () => li.remove() }, "×"),
  );
  li.dataset.filename = fileName || "";
  $("notes").append(li);
}

function addNotice(title, text) {
  if (closed()) return;
  const li = h(
    "li",
    { class: "note note--info", "data-testid": "notice" },
    h("span", { class: "note-text" }, h("strong", { text: title }), text),
    h("button", { class: "dismiss", type: "button", "aria-label": t("common.dismiss"), onclick: () => li.remove() }, "×"),
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

/** The guest's Remove: withdrawn on the server (its bytes, and the photo on the wall and in the host's list), then forgotten here. */
async function remove(id) {
  const view = attempts.get(id);
  try {
    await uploader.remove(id);
  } catch (err) {
    // Kept (cancelled): Remove can be pressed again.
    addNotice(t("guest.removeFailed.title", { name: view ? view.fileName : "" }), t("guest.removeFailed.text"));
    return;
  }
  dropCard(id);
}

/** Forgets a card and its preview. */
function dropCard(id) {
  if (!attempts.has(id) || closed()) return;
  attempts.delete(id);
  spoken.delete(id);
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
  if (!view || !view.id || closed()) return;
  attempts.set(view.id, view);
  announce(view);

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
  }
  fillCard(card, view);
  updateSummary();
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
    { class: "progress", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": "0", "data-testid": "progress", "aria-label": t("guest.progressOf", { name: view.fileName }) },
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
    { class: "card", tabindex: "-1", "data-testid": "card", dataset: { id: view.id, filename: view.fileName } },
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
  if (code === "network") return t("guest.reason.network");
  if (code === "rate_limited" || code === "http_429") return t("guest.reason.busy");
  if (code === "url_expired" || code === "expired") return t("guest.reason.expired");
  if (code === "object_store_unavailable" || code === "database_unavailable" || code === "internal" || /^http_5\d\d$/.test(code)) return t("guest.reason.server");
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
  const percent = formatPercent(pct);
  const parts = { done: view.partsDone, count: view.partCount };
  switch (view.transfer) {
    case "queued":
      // A large file that goes on from the parts the server holds says so.
      setState(card.transfer, view.partsDone ? t("guest.transfer.queuedParts", parts) : t("guest.transfer.queued"), "");
      break;
    case "uploading":
      setState(card.transfer, view.partCount ? t("guest.transfer.uploadingParts", { percent, ...parts }) : t("guest.transfer.uploading", { percent }), "active");
      break;
    case "uploaded":
      // The same photo was already shared here: nothing was sent.
      setState(card.transfer, t(view.duplicateOf ? "guest.transfer.alreadyShared" : "guest.transfer.uploaded"), "ok");
      break;
    case "needs_file":
      setState(card.transfer, t(isVideo(view.type) ? "guest.transfer.needsVideo" : "guest.transfer.needsPhoto"), "wait");
      break;
    case "failed":
      setState(card.transfer, t("guest.transfer.failed"), "bad");
      break;
    default:
      setState(card.transfer, view.transfer, "");
  }

  // Confirmation.
  switch (view.confirmation) {
    case "confirming":
      setState(card.confirmation, t("guest.confirm.confirming"), "active");
      break;
    case "confirmed":
      setState(card.confirmation, t("guest.confirm.confirmed"), "ok");
      break;
    case "rejected":
      setState(card.confirmation, t("guest.confirm.rejected"), "bad");
      break;
    case "failed":
      setState(card.confirmation, t("guest.confirm.failed"), "bad");
      break;
    case "expired":
      setState(card.confirmation, t(view.replacedBy ? "guest.confirm.expiredReplaced" : "guest.confirm.expired"), "bad");
      break;
    default:
      setState(card.confirmation, "", "");
  }

  // Moderation.
  const reason = view.media && view.media.reason;
  switch (view.moderation) {
    case "pending":
      setState(card.moderation, t("guest.moderation.pending"), "wait");
      break;
    case "approved":
      setState(card.moderation, t("guest.moderation.approved"), "ok");
      break;
    case "rejected":
      setState(card.moderation, reason ? t("guest.moderation.rejectedReason", { reason }) : t("guest.moderation.rejected"), "bad");
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
    return t("guest.note.retryingIn", { when: inSeconds(s), reason: shortReason(view.error) });
  }
  if (view.inBackground) return t("guest.note.background");
  if (view.paused) return t("guest.note.paused");
  if (navigator.onLine === false) return t("guest.note.offline");
  if (!view.drivenHere) return t("guest.note.otherTab");
  if (view.error) return t("guest.note.tryingAgain", { reason: shortReason(view.error) });
  return "";
}

/** What went wrong with an attempt, for its card (empty when nothing did). */
function errorTextFor(view) {
  const expiredAlone = view.confirmation === "expired" && !view.replacedBy;
  const message = view.error ? view.error.message : "";
  if (view.error && (view.error.code === "session_revoked" || view.error.code === "address_blocked")) {
    return t("guest.error.removedByHost");
  }
  if (view.transfer === "failed" && view.error) {
    if (view.error.code === "cancelled") return t("guest.error.cancelled");
    if (view.error.code === "file_changed") return t("guest.error.fileChanged");
    if (view.error.code === "file_unreadable") return t("guest.error.fileUnreadable");
    return t("guest.error.upload", { message });
  }
  if (view.confirmation === "failed" && view.error) return t("guest.error.save", { message });
  if (view.confirmation === "rejected") return t("guest.error.rejected", { message: message || t("guest.error.refusedByServer") });
  if (expiredAlone) return t("guest.error.rejected", { message: message || t("guest.error.expired") });
  return "";
}

/**
 * An action button whose wording says what happens to the file: the verb,
 * then its effect ("Cancel — the file won't be uploaded"). The dash is read
 * as a pause by screen readers and hidden on screen, where the effect sits
 * on its own line.
 */
function actionButton(testid, tone, verb, effect, onClick) {
  const button = h(
    "button",
    { class: `button button--small button--action${tone ? ` button--${tone}` : ""}`, type: "button", "data-testid": testid },
    h("span", { class: "action-verb", text: verb }),
    h("span", { class: "visually-hidden", text: " — " }),
    h("span", { class: "action-effect", text: effect }),
  );
  // Busy while it runs, but not `disabled`: a disabled button drops the
  // keyboard focus, which then could not move on to the card's next action.
  let busy = false;
  button.addEventListener("click", async (event) => {
    // The second click of a double click is not a second press: the card's
    // buttons change under the pointer (Retry becomes Cancel), so it would
    // undo the first.
    if (busy || event.detail > 1) return;
    busy = true;
    button.setAttribute("aria-disabled", "true");
    try {
      await onClick();
    } catch (err) {
      console.warn(`${testid} failed`, err);
    }
    busy = false;
    button.removeAttribute("aria-disabled");
  });
  return button;
}

function fillExtra(card, view) {
  // A failure shows on its own axis: the upload, or the saving after it.
  const transferFailed = view.transfer === "failed" && view.confirmation === "unconfirmed";
  const saveFailed = view.confirmation === "failed";
  // A file that changed on the device since it was picked cannot be sent
  // as it was: the guest picks it again (Remove, then the picker).
  const canRetry = (transferFailed && !(view.error && view.error.code === "file_changed")) || saveFailed;
  const expiredAlone = view.confirmation === "expired" && !view.replacedBy;
  const needsFile = view.transfer === "needs_file";
  // Cancel while the file waits or goes up (in this tab): it then fails as
  // "cancelled", and Retry or Remove follow.
  const canCancel =
    !view.terminal && view.drivenHere && view.confirmation === "unconfirmed" && (view.transfer === "queued" || view.transfer === "uploading");
  // Pause while it waits or goes up; a paused one (even after a reload)
  // resumes from what the server already holds.
  const canPause = canCancel && !view.paused;
  const canResume = !view.terminal && view.paused;
  const errorText = errorTextFor(view);
  // A saved upload may be removed too: it leaves the wall and the host's list.
  const canForget = canRetry || needsFile || view.confirmation === "rejected" || expiredAlone || view.confirmation === "confirmed";

  const key = [errorText, canRetry, saveFailed, needsFile, expiredAlone, canForget, canCancel, canPause, canResume, view.type].join("|");
  if (card.extraKey === key) return;
  card.extraKey = key;
  // A keyboard user who pressed Cancel or Retry stays on this card: on its
  // next action, or on the card itself.
  const hadFocus = card.root.contains(document.activeElement) && document.activeElement !== card.root;

  const parts = [];
  if (errorText) parts.push(h("p", { class: "card-error", "data-testid": "error", role: "alert", text: capitalize(errorText) }));
  if (needsFile || expiredAlone) {
    const kind = kindWord(view);
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
        h("p", { text: t(needsFile ? `guest.pickAgain.${kind}` : `guest.pickAgainExpired.${kind}`) }),
        h("p", { class: "pick-again-help" }, t(needsFile ? "guest.pickAgain.help" : "guest.pickAgainExpired.help")),
        h("label", { class: "button button--primary button--small", "data-testid": "pick-again" }, input, t(`guest.pickAgain.button.${kind}`)),
      ),
    );
  }
  card.slot.replaceChildren(...parts);

  const actions = [];
  if (canCancel) {
    actions.push(actionButton("cancel", "", t("guest.action.cancel"), t("guest.action.cancelEffect"), () => uploader.cancel(view.id)));
  }
  if (canPause) {
    actions.push(actionButton("pause", "", t("guest.action.pause"), t("guest.action.pauseEffect"), () => uploader.pause(view.id)));
  }
  if (canResume) {
    actions.push(actionButton("resume", "primary", t("guest.action.resume"), t("guest.action.resumeEffect"), () => uploader.resume(view.id)));
  }
  if (canRetry) {
    const effect = saveFailed ? t("guest.action.retrySaveEffect") : t("guest.action.retryEffect");
    actions.push(actionButton("retry", "primary", t(saveFailed ? "guest.action.retrySave" : "guest.action.retry"), effect, () => uploader.retry(view.id)));
  }
  if (canForget) {
    actions.push(actionButton("forget", "quiet", t("guest.action.remove"), t("guest.action.removeEffect"), () => remove(view.id)));
  }
  card.actions.replaceChildren(...actions);
  if (hadFocus && !card.root.contains(document.activeElement)) (actions[0] || card.root).focus();
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
    return [video, h("span", { class: "kind", text: t("common.video") })];
  }
  const img = h("img", { alt: "", loading: "lazy", decoding: "async", src });
  fallback(img);
  return [img];
}

function updateSummary() {
  if (closed()) return;
  const shown = [...cards.keys()].map((id) => attempts.get(id)).filter(Boolean);
  $("empty").hidden = shown.length > 0;
  const title = $("uploads-title");
  title.hidden = shown.length === 0;
  const saved = shown.filter((a) => a.confirmation === "confirmed").length;
  title.textContent = shown.length ? t("guest.uploadsSaved", { saved, total: shown.length }) : t("guest.uploads");
}

// --------------------------------------------------------- announcing ----

/**
 * Says what became of an attempt, politely and at milestones only: the
 * upload started, each quarter of it, saved, failed, needs the file, and
 * the host's decision. A file that jumps past several quarters at once is
 * said once, at the highest. The first view of an attempt (a restore after
 * a reload, or a file just picked) only sets where it stands.
 */
function announce(view) {
  const before = spoken.get(view.id);
  const now = milestoneOf(view);
  spoken.set(view.id, now);
  if (!before) return;
  const name = view.fileName;
  if (now.transfer === "failed" && before.transfer !== "failed") {
    say(t("guest.say.failed", { name, reason: capitalize(errorTextFor(view)) }));
  } else if (now.confirmation === "failed" && before.confirmation !== "failed") {
    say(t("guest.say.saveFailed", { name, reason: capitalize(errorTextFor(view)) }));
  } else if (now.transfer === "needs_file" && before.transfer !== "needs_file") {
    say(t("guest.say.needsFile", { name }));
  } else if ((now.confirmation === "rejected" || now.confirmation === "expired") && now.confirmation !== before.confirmation) {
    if (!view.replacedBy) say(t("guest.say.rejected", { name }));
  } else if (now.confirmation === "confirmed" && before.confirmation !== "confirmed") {
    say(t("guest.say.saved", { name }));
  } else if (now.quarter > before.quarter && now.quarter < 100) {
    // All of it sent is not said: "saved" follows at once.
    say(now.quarter === 0 ? t("guest.say.started", { name }) : t("guest.say.progress", { name, percent: formatPercent(now.quarter) }));
  }
  if (now.moderation !== before.moderation && before.moderation !== "unknown") {
    if (now.moderation === "approved") say(t("guest.say.approved", { name }));
    if (now.moderation === "rejected") say(t("guest.say.notAccepted", { name }));
  }
}

/** Where an attempt stands, as far as announcements go. */
function milestoneOf(view) {
  let quarter = -1;
  if (view.transfer === "uploading") {
    const total = view.bytesTotal || view.size || 0;
    const pct = total > 0 ? (Math.min(view.bytesSent || 0, total) / total) * 100 : 0;
    quarter = Math.min(75, Math.floor(pct / 25) * 25);
  } else if (view.transfer === "uploaded") {
    quarter = 100;
  }
  return { quarter, transfer: view.transfer, confirmation: view.confirmation, moderation: view.moderation };
}

/** Adds a line to the polite log region (the oldest lines go). */
function say(text) {
  const log = $("announcer");
  if (!log) return;
  log.append(h("p", { text }));
  while (log.children.length > ANNOUNCER_LINES) log.firstElementChild.remove();
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
