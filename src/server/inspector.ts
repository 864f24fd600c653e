/**
 * The trajectory inspector's static files (the front end in ui/, built into dist/ui by `npm run build`)
 * at /ui/. The page and its assets hold no data, so they are open; the page then reads runs and
 * episodes through the /v1 API with the caller's token, under the usual scopes.
 *
 * Files are read from one directory and nothing else: a path with a `..`, `.` or empty segment, a
 * backslash or a NUL (however encoded) is refused, and so is one that resolves (through a link) outside
 * it. Every answer carries a Content-Security-Policy allowing this origin only, so a trajectory that
 * holds markup (an agent's message, a web page's text) can never run script in the inspector.
 */
import { readFile, realpath, stat } from "node:fs/promises";
import { extname, isAbsolute, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply } from "fastify";
import { LlmixError, ServiceError, ValidationError } from "../core/errors.js";
import { errorBody } from "./http-errors.js";

/** Where `npm run build` puts the inspector: dist/ui under the package root (this file is in src/server or dist/server). */
export const DEFAULT_INSPECTOR_DIR = fileURLToPath(new URL("../../dist/ui/", import.meta.url));

/** The policy every inspector answer carries: scripts, styles, data and images from this origin only. */
export const INSPECTOR_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** Vite names what it emits under assets/ by content hash: such a file never changes, so it may be cached for good. */
const IMMUTABLE = "public, max-age=31536000, immutable";

const ROUTE_DOC = { tags: ["inspector"], security: [], responses: { "200": { description: "the file" }, "404": { description: "no such file" } } };

/** The file a request path (below /ui/) names, or an invalid_argument error when it tries to leave `root`. */
export function inspectorFile(root: string, requested: string): string {
  const path = requested === "" ? "index.html" : requested;
  // A trailing slash names a directory: allowed here, and answered 404 since only files are served.
  const segments = (path.endsWith("/") ? path.slice(0, -1) : path).split("/");
  if (path.includes("\\") || path.includes("\0") || isAbsolute(path) || segments.some((s) => s === "" || s === "." || s === "..")) {
    throw new ValidationError("invalid_argument", `refused inspector path ${JSON.stringify(requested)}: only files inside the inspector's directory are served`);
  }
  const file = resolve(root, ...segments);
  if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) throw new ValidationError("invalid_argument", `refused inspector path ${JSON.stringify(requested)}`);
  return file;
}

/** Serve the inspector at /ui/ from `dir` (default: dist/ui of this package). */
export async function registerInspector(app: FastifyInstance, options: { dir?: string } = {}): Promise<void> {
  const root = resolve(options.dir ?? DEFAULT_INSPECTOR_DIR);

  const send = async (reply: FastifyReply, requested: string) => {
    reply.header("content-security-policy", INSPECTOR_CSP).header("x-content-type-options", "nosniff").header("referrer-policy", "no-referrer").header("x-frame-options", "DENY");
    const built = await stat(join(root, "index.html")).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!built) {
      // Not an error of the request: the package was installed or checked out without its front end built.
      const error = new LlmixError("internal", `the inspector is not built: ${join(root, "index.html")} is missing; run \`npm run build\` in the llmix-rl package`, { dir: root });
      return reply.code(503).header("cache-control", "no-store").type("application/json; charset=utf-8").send(errorBody(error));
    }
    const file = inspectorFile(root, requested);
    const notFound = () => new ServiceError("unknown_route", `no file /ui/${requested} in the inspector`);
    const real = await realpath(file).catch(() => null);
    const realRoot = await realpath(root);
    if (real === null || !real.startsWith(realRoot + sep)) throw notFound();
    const type = CONTENT_TYPES[extname(real).toLowerCase()];
    if (!type || !(await stat(real)).isFile()) throw notFound();
    const body = await readFile(real);
    const cache = requested.startsWith("assets/") ? IMMUTABLE : "no-cache";
    return reply.header("cache-control", cache).type(type).send(body);
  };

  const open = (summary: string, extra: Record<string, unknown> = {}) => ({ scope: "open" as const, openapi: { summary, ...ROUTE_DOC, ...extra } });
  const wildcard = { parameters: [{ name: "wildcard", in: "path", required: true, schema: { type: "string" }, description: "the file's path below /ui/" }] };
  // /ui (no slash) redirects, so the page's relative asset URLs resolve under /ui/ (also behind a path prefix).
  app.get("/ui", { config: open("the trajectory inspector (redirects to /ui/)") }, async (_request, reply) => reply.code(302).header("location", "ui/").send());
  app.get("/ui/", { config: open("the trajectory inspector's page") }, async (_request, reply) => send(reply, ""));
  app.get("/ui/*", { config: open("a file of the trajectory inspector", wildcard) }, async (request, reply) => send(reply, (request.params as { "*": string })["*"]));
}
