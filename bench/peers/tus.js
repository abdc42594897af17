// What an app ships to use tus-js-client.
export { Upload } from "tus-js-client";
