// The page: no wasm here, only the proxy. `?api=&event=&code=` name the
// reference server, the event and its guest code.
import { RemoteUploader } from "./remote-uploader.js";

const params = new URLSearchParams(location.search);
const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const uploader = await RemoteUploader.open(worker, {
  apiBase: params.get("api"), event: params.get("event"), guestCode: params.get("code"),
});
window.uploader = uploader;
window.outcomes = [];

const list = document.getElementById("attempts");
const render = () => {
  list.replaceChildren(...uploader.attempts.map((a) => {
    const li = document.createElement("li");
    li.dataset.id = a.id;
    li.textContent = `${a.fileName}: ${a.transfer}, ${a.confirmation}`;
    return li;
  }));
};
uploader.onChange(render);
uploader.onRemove(render);
document.querySelector("[data-testid='file-input']").addEventListener("change", async (e) => {
  window.outcomes.push(...(await uploader.add(e.target.files)));
  render();
});
await uploader.restore();
render();
document.body.dataset.ready = "1";
