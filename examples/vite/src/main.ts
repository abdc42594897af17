// A minimal app using the npm package the way any web app would after
// `npm install upload-once`: typed options, typed attempts, no `any`.
import { Uploader, type AttemptView, type AddOutcome, type UploaderOptions } from "upload-once";

const params = new URLSearchParams(location.search);
const options: UploaderOptions = {
  apiBase: params.get("api") ?? location.origin,
  event: params.get("event") ?? "wedding",
  guestCode: params.get("code") ?? "",
  concurrency: 3,
  dbName: "upload-once-vite-example",
};

const status = document.querySelector<HTMLParagraphElement>("#status")!;
const list = document.querySelector<HTMLUListElement>("#attempts")!;
const input = document.querySelector<HTMLInputElement>("#files")!;

function describe(a: AttemptView): string {
  const transfer = a.transfer === "uploading" ? `uploading ${Math.round((100 * a.bytesSent) / Math.max(a.bytesTotal, 1))}%` : a.transfer;
  return `${a.fileName}: ${transfer}, ${a.confirmation}, moderation ${a.moderation}`;
}

function render(a: AttemptView): void {
  let item = list.querySelector<HTMLLIElement>(`li[data-id="${a.id}"]`);
  if (!item) {
    item = document.createElement("li");
    item.dataset.id = a.id;
    item.dataset.testid = "attempt";
    list.append(item);
  }
  item.dataset.confirmation = a.confirmation;
  item.textContent = describe(a);
}

try {
  const uploader: Uploader = await Uploader.open(options);
  // Every subscription returns the function that ends it.
  const stopListening: () => void = uploader.onChange(render);
  window.addEventListener("pagehide", stopListening, { once: true });
  const restored: AttemptView[] = await uploader.restore();
  restored.forEach(render);
  status.textContent = "Ready";
  document.body.dataset.ready = "1";
  input.addEventListener("change", async () => {
    if (!input.files) return;
    const outcomes: AddOutcome[] = await uploader.add(input.files);
    for (const o of outcomes) {
      if (o.ok) render(o.attempt);
      else status.textContent = `${o.fileName}: ${o.error.message}`;
    }
    input.value = "";
  });
} catch (e) {
  const error = e as Error & { code?: string };
  status.textContent = `Could not start: ${error.code ?? "error"}: ${error.message}`;
}
