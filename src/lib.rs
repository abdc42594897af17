//! upload-once: the wasm client (placeholder until the client lands).
