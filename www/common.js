// Small helpers shared by the guest page, the host page and the wall.
// Everything that shows a file name or a server string goes through text
// nodes: nothing here ever sets innerHTML. Strings, numbers, sizes and
// times in the reader's language are in i18n.js.

/**
 * Creates an element. `attrs` keys: `class`, `text`, `dataset` (object),
 * `on<Event>` (listener), `hidden` etc. (properties), anything else as an
 * attribute. Children: nodes or strings (strings become text nodes).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "hidden" || key === "disabled" || key === "checked" || key === "multiple") el[key] = !!value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** A small stroke icon from path data (constants only, never user data). */
export function icon(paths, size = 24) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", String(size));
  svg.setAttribute("height", String(size));
  svg.setAttribute("fill", "none");
  svg.setAttribute("stroke", "currentColor");
  svg.setAttribute("stroke-width", "1.8");
  svg.setAttribute("stroke-linecap", "round");
  svg.setAttribute("stroke-linejoin", "round");
  svg.setAttribute("aria-hidden", "true");
  for (const d of [].concat(paths)) {
    const path = document.createElementNS(SVG_NS, "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
  return svg;
}

export const ICONS = {
  photo: ["M4 6.5A2.5 2.5 0 0 1 6.5 4h11A2.5 2.5 0 0 1 20 6.5v11a2.5 2.5 0 0 1-2.5 2.5h-11A2.5 2.5 0 0 1 4 17.5z", "M4 16l4.5-4.5 3.5 3.5 2.5-2.5L20 18", "M15.5 9.5h.01"],
  video: ["M4 7.5A2.5 2.5 0 0 1 6.5 5h7A2.5 2.5 0 0 1 16 7.5v9a2.5 2.5 0 0 1-2.5 2.5h-7A2.5 2.5 0 0 1 4 16.5z", "M16 10.5l4-2.5v8l-4-2.5"],
  upload: ["M12 16V4", "M7 9l5-5 5 5", "M4 16v2.5A1.5 1.5 0 0 0 5.5 20h13a1.5 1.5 0 0 0 1.5-1.5V16"],
  offline: ["M2 8.5a15 15 0 0 1 20 0", "M5.5 12a10 10 0 0 1 13 0", "M9 15.5a5 5 0 0 1 6 0", "M12 19h.01", "M3 3l18 18"],
};

/** The page's query parameters, trimmed; empty strings count as missing. */
export function params() {
  const q = new URLSearchParams(location.search);
  const get = (name) => {
    const v = q.get(name);
    return v && v.trim() ? v.trim() : null;
  };
  return { get };
}

/**
 * The origins besides this page's that `?api=` may name: the server lists
 * them (`--page-api-origin`) in `<meta name="upload-once-api-origins">`.
 */
function allowedApiOrigins() {
  const meta = document.querySelector('meta[name="upload-once-api-origins"]');
  return new Set(((meta && meta.content) || "").split(/[\s,]+/).filter(Boolean));
}

/**
 * The API base: this page's origin, or `?api=` when it names this origin
 * or one the server allows. `{ base }`, or `{ refused }` (the origin `?api=`
 * named) when it names any other: then the page says so and sends nothing,
 * so a link cannot send a guest's photos or a host's token elsewhere.
 */
export function apiBase(p) {
  const api = p.get("api");
  if (!api) return { base: location.origin };
  let url;
  try {
    url = new URL(api, location.href);
  } catch {
    return { refused: api };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return { refused: api };
  if (url.origin !== location.origin && !allowedApiOrigins().has(url.origin)) return { refused: url.origin };
  return { base: `${url.origin}${url.pathname}`.replace(/\/+$/, "") };
}

/**
 * Replaces `root`'s content with a friendly explanation (a missing link
 * parameter, a wrong code...). `lines` are strings or nodes.
 */
export function showMessage(root, title, ...lines) {
  root.replaceChildren(
    h("div", { class: "message", role: "alert", "data-testid": "message" }, h("h1", { text: title }), ...lines.map((l) => h("p", {}, l))),
  );
}

/** A `<code>` element (for example links in messages). */
export function code(text) {
  return h("code", { text });
}

/**
 * Reads an error answer: the server's problem+json `detail` when there is
 * one, else the status line.
 */
export async function problemOf(response) {
  let detail = "";
  let code = "";
  try {
    const body = await response.json();
    detail = body && typeof body.detail === "string" ? body.detail : "";
    code = body && typeof body.code === "string" ? body.code : "";
  } catch {
    // not JSON
  }
  const err = new Error(detail || `${response.status} ${response.statusText}`.trim());
  err.code = code || `http_${response.status}`;
  err.status = response.status;
  return err;
}

/** Whether a content type is shown with <video>. */
export function isVideo(type) {
  return typeof type === "string" && type.toLowerCase().startsWith("video/");
}

/** Whether a content type is shown with <img>. */
export function isImage(type) {
  return typeof type === "string" && type.toLowerCase().startsWith("image/");
}
