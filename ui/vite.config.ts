/**
 * The inspector's build: ui/ -> dist/ui/, hashed assets, nothing fetched from elsewhere at run time
 * (served by src/server/inspector.ts under a strict Content-Security-Policy). JSX goes through Vite's
 * own Oxc transform with Preact's runtime, so no framework plugin is needed.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  // Relative asset URLs: the page works at /ui/ and behind a proxy's path prefix alike.
  base: "./",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/ui", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // The polyfill would be an inline script, which the CSP forbids; every browser it targets preloads modules.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: true,
  },
});
