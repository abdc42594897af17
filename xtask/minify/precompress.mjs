// Writes a brotli (`.br`, quality 11) and a gzip (`.gz`, level 9) copy
// beside each file given, for the reference server to send as they are
// (chosen by Accept-Encoding): no compression work per request. Only files
// whose copy is missing or older than themselves are (re)written.
//
//   node precompress.mjs <file or directory>...
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, extname } from "node:path";
import { brotliCompressSync, gzipSync, constants } from "node:zlib";

const COMPRESSIBLE = new Set([".js", ".mjs", ".wasm", ".css", ".html", ".json", ".svg", ".map", ".txt"]);

function* files(path) {
  const st = statSync(path);
  if (st.isDirectory()) {
    for (const name of readdirSync(path)) {
      if (name === "node_modules") continue;
      yield* files(join(path, name));
    }
  } else if (COMPRESSIBLE.has(extname(path))) {
    yield path;
  }
}

let written = 0;
for (const arg of process.argv.slice(2)) {
  for (const file of files(arg)) {
    const source = statSync(file);
    const fresh = (copy) => {
      try {
        return statSync(copy).mtimeMs >= source.mtimeMs;
      } catch {
        return false;
      }
    };
    if (fresh(`${file}.br`) && fresh(`${file}.gz`)) continue;
    const bytes = readFileSync(file);
    writeFileSync(
      `${file}.br`,
      brotliCompressSync(bytes, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: 11,
          [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
        },
      }),
    );
    writeFileSync(`${file}.gz`, gzipSync(bytes, { level: 9 }));
    written += 1;
  }
}
if (written) console.error(`precompressed ${written} file(s)`);
