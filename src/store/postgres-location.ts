/**
 * Where a PostgreSQL trajectory store lives: a `postgres://` or `postgresql://` URL and a schema. The
 * schema comes from the `schema` option, else the URL's `?schema=NAME`, else the first entry of a
 * `search_path` set through the URL's `options=-c search_path=NAME`, else `public`. Messages name the
 * URL with its password removed.
 */
import { LlmixError, ValidationError } from "../core/errors.js";

/** A parsed store URL. */
export interface PostgresLocation {
  /** What pg connects with: the URL without its `schema` parameter. */
  connectionString: string;
  /** The schema the store's tables live in. */
  schema: string;
  /** The URL as given, for messages: no password. */
  display: string;
}

/** True if `spec` names a PostgreSQL store (`postgres://` or `postgresql://`) rather than a SQLite path. */
export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

/** The URL without its password (in the user part or a `password` parameter), for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "";
    if (u.searchParams.has("password")) u.searchParams.set("password", "***");
    return u.toString();
  } catch {
    // Unparsable: drop anything that looks like user:password@ rather than echo a secret.
    return url.replace(/\/\/[^@/]*@/, "//***@");
  }
}

/** Parse a store URL; `schema` overrides the one the URL names. A malformed URL is store_error. */
export function parsePostgresUrl(url: string, schema?: string): PostgresLocation {
  if (typeof url !== "string" || !isPostgresUrl(url)) {
    throw new ValidationError("invalid_argument", `a PostgreSQL store URL starts with postgres:// or postgresql://, not ${JSON.stringify(redactUrl(String(url)))}`);
  }
  const display = redactUrl(url);
  let u: URL;
  try {
    u = new URL(url);
  } catch (error) {
    throw new LlmixError("store_error", `cannot open the trajectory store at ${display}: not a valid URL (${error instanceof Error ? error.message : String(error)})`, { url: display });
  }
  const fromUrl = u.searchParams.get("schema");
  u.searchParams.delete("schema");
  const name = schema ?? fromUrl ?? searchPathSchema(u.searchParams.get("options")) ?? "public";
  checkSchemaName(name, display);
  return { connectionString: u.toString(), schema: name, display };
}

/** The first schema of `-c search_path=...` (or `--search_path=...`) in a libpq `options` value. */
function searchPathSchema(options: string | null): string | undefined {
  if (!options) return undefined;
  const match = /(?:-c\s*|--)search_path=("(?:[^"]|"")*"|[^\s,]+)/.exec(options);
  if (!match?.[1]) return undefined;
  const first = match[1];
  const name = first.startsWith('"') ? first.slice(1, -1).replace(/""/g, '"') : first.toLowerCase();
  // "$user" means a schema named after the role; the store needs one fixed name.
  return name === "$user" ? undefined : name;
}

function checkSchemaName(name: string, display: string): void {
  // PostgreSQL silently truncates identifiers to 63 bytes: two long names could share one schema.
  if (name.length === 0 || name.includes("\0") || Buffer.byteLength(name) > 63) {
    throw new ValidationError("invalid_argument", `the store schema must be 1 to 63 bytes without NUL, not ${JSON.stringify(name)} (in ${display})`, { schema: name });
  }
}
