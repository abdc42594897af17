// The guest page's service worker where the browser has Background Fetch
// (Chromium; www/guest.js registers it as a module there, and www/sw.js
// everywhere else).
//
// - Everything www/sw.js does (the shell cache for repeat visits, files
//   shared from the gallery): it is imported as it is, with its build
//   filled in by the server.
// - **Uploads that outlive the tab** (issue 33). The guest page hands what
//   it has left to send to a Background Fetch when it is hidden
//   (`Uploader.handOver`): the browser sends the same signed PUTs, also
//   once the tab is closed, and shows their progress in its download UI.
//   When the fetch ends, this worker loads the same package and settles it
//   (`settleBackgroundFetch`): the uploader opens here, asks the server
//   what became of each attempt, and confirms each stored one with the
//   same idempotent confirm and the same attempt id. A fetch the guest
//   cancelled in the download UI cancels its uploads; one that failed
//   leaves them to the next visit, which sends them again.
//
// docs/pages.md, "Uploads that outlive the tab".

import "/sw.js";
import init, { settleBackgroundFetch } from "/pkg/upload_once.js";

let loading = null;
/** The package, loaded once, when the first fetch ends (not at each start). */
const loaded = () => (loading ??= init());

for (const type of ["backgroundfetchsuccess", "backgroundfetchfail", "backgroundfetchabort"]) {
  self.addEventListener(type, (event) => event.waitUntil(settle(event)));
}

async function settle(event) {
  try {
    await loaded();
    const settled = await settleBackgroundFetch(event.registration);
    if (settled) console.info("upload-once: a Background Fetch settled:", JSON.stringify(settled));
  } catch (err) {
    // The next visit asks the server about every attempt anyway.
    console.warn("upload-once: a Background Fetch could not be settled:", err && err.code, err && err.message);
  }
}
