import { defineConfig } from "vite";
import wasm from "vite-plugin-wasm";

// The package is built with `wasm-pack build --target bundler`, which imports
// its .wasm as an ES module: vite-plugin-wasm provides that.
export default defineConfig({
  plugins: [wasm()],
  build: { target: "es2022" },
});
