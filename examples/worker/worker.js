// The worker: the whole package runs here, off the page's main thread.
import init, { serveUploader } from "./pkg/upload_once.js";

await init();
serveUploader(self);
