// A page-side proxy for an uploader that runs in a dedicated worker
// (`serveUploader` in the package; the messages are `UploaderCall`,
// `UploaderReply` and `UploaderEventMessage` in its TypeScript types). It
// has the same methods as `Uploader`, each answering a Promise; the getters
// (`busy`, `idle`, `event`, …) are kept from the worker's events and
// answers. Copy it into an app as it is: it has no dependencies.
export class RemoteUploader {
  /** Opens the uploader in `worker` (which calls `serveUploader(self)`), once it says it is ready. */
  static async open(worker, options) {
    const uploader = new RemoteUploader(worker);
    await uploader.#ready;
    uploader.#state = await uploader.#call("open", options);
    return uploader;
  }

  #worker;
  #next = 1;
  #pending = new Map();
  #listeners = { change: new Set(), remove: new Set(), storageError: new Set(), session: new Set(), busy: new Set() };
  #state = null;
  #readied;
  #ready = new Promise((resolve) => { this.#readied = resolve; });

  constructor(worker) {
    this.#worker = worker;
    worker.addEventListener("message", ({ data }) => {
      if (data && typeof data.uploadOnce === "number") {
        const call = this.#pending.get(data.uploadOnce);
        this.#pending.delete(data.uploadOnce);
        if (!call) return;
        if ("error" in data) {
          const error = new Error(data.error.message);
          error.name = "UploadError";
          error.code = data.error.code;
          call.reject(error);
        } else {
          call.resolve(data.value);
        }
      } else if (data && data.uploadOnceEvent === "ready") {
        this.#readied();
      } else if (data && typeof data.uploadOnceEvent === "string") {
        this.#seen(data.uploadOnceEvent, data.value);
        for (const listener of this.#listeners[data.uploadOnceEvent] ?? []) {
          if (data.uploadOnceEvent === "session") listener(...data.value);
          else listener(data.value);
        }
      }
    });
  }

  #call(call, ...args) {
    return new Promise((resolve, reject) => {
      const uploadOnce = this.#next++;
      this.#pending.set(uploadOnce, { resolve, reject });
      this.#worker.postMessage({ uploadOnce, call, args });
    });
  }

  #seen(kind, value) {
    const state = this.#state;
    if (!state) return;
    if (kind === "busy") state.busy = value;
    else if (kind === "storageError") state.storageError = value;
    else if (kind === "session") [state.event, state.sessionError] = [value[0] ?? state.event, value[1]];
    else if (kind === "change") {
      const at = state.attempts.findIndex((a) => a.id === value.id);
      if (at >= 0) state.attempts[at] = value;
      else state.attempts.push(value);
    } else if (kind === "remove") state.attempts = state.attempts.filter((a) => a.id !== value);
  }

  #kept(attempts) {
    if (this.#state) this.#state.attempts = attempts;
    return attempts;
  }

  #on(kind, listener) {
    this.#listeners[kind].add(listener);
    return () => this.#listeners[kind].delete(listener);
  }

  /** Files (a FileList or an array) go to the worker as they are: `File`s are cloneable, their bytes are not copied. */
  add(files) { return this.#call("add", [...files]); }
  async restore() { return this.#kept(await this.#call("restore")); }
  async list() { return this.#kept(await this.#call("list")); }
  get(id) { return this.#call("get", id); }
  file(id) { return this.#call("file", id); }
  retry(id) { return this.#call("retry", id); }
  cancel(id) { return this.#call("cancel", id); }
  pause(id) { return this.#call("pause", id); }
  resume(id) { return this.#call("resume", id); }
  forget(id) { return this.#call("forget", id); }
  remove(id) { return this.#call("remove", id); }
  refresh() { return this.#call("refresh"); }
  close() { return this.#call("close"); }
  /** The worker's getters and attempts, asked now. */
  async state() { this.#state = await this.#call("state"); return this.#state; }

  onChange(listener) { return this.#on("change", listener); }
  onRemove(listener) { return this.#on("remove", listener); }
  onStorageError(listener) { return this.#on("storageError", listener); }
  onSessionChange(listener) { return this.#on("session", listener); }
  onBusyChange(listener) { return this.#on("busy", listener); }

  /** The attempts as the last answer and events left them, oldest first. */
  get attempts() { return this.#state.attempts; }
  get busy() { return this.#state.busy; }
  get idle() { return this.#state.idle; }
  get event() { return this.#state.event; }
  get storageError() { return this.#state.storageError; }
  get sessionError() { return this.#state.sessionError; }
  get persisted() { return this.#state.persisted; }
}
