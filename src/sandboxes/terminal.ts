/**
 * The terminal sandbox: a deterministic bash-like shell over a MemoryFileSystem. The
 * implementation lives in ./terminal/ (parser, expansion, regex engine, commands).
 */
export * from "./terminal/index.js";
