/**
 * Bearer tokens with scopes (DESIGN §7, §9). `--auth FILE` is JSON:
 *
 *   {"tokens": [{"token": "...", "scopes": ["env:run", "trajectories:read", "admin"], "name": "trainer"}]}
 *
 * `env:run` drives environments (envs, sessions, the WebSocket), `trajectories:read` reads the store
 * (runs, episodes, replay), `trajectories:export` exports them, `trajectories:delete` deletes them,
 * `admin` may do everything (including /metrics and the audit log). Tokens are compared in constant
 * time and never logged; a request names its token only by the token's `name` and `id` (a digest
 * prefix). A data policy (data-policy.ts) also gives each token a tenant and the environments it may use.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { ServiceError, ValidationError } from "../core/errors.js";
import { formatIssues, readJsonConfig } from "../core/validation.js";

/** The scopes a token can hold. */
export const SCOPES = ["env:run", "trajectories:read", "trajectories:export", "trajectories:delete", "admin"] as const;
export type Scope = (typeof SCOPES)[number];
/** What a route needs: a scope, or nothing ("open"). */
export type RouteScope = Scope | "open";

/** A token as the server knows it (the secret itself is kept only as a digest). */
export interface TokenIdentity {
  name: string;
  /** A stable id for logs and the audit log: the first 12 hex digits of the token's SHA-256 (not reversible). */
  id: string;
  scopes: readonly Scope[];
  /** The tenant whose sessions and trajectories this token sees (null: none — admin, or a plain --auth file). */
  tenant: string | null;
  /** The environments this token may run and read (null: every one the deployment allows). */
  environments: readonly string[] | null;
}

/** A token entry before its secret is reduced to a digest. */
export interface TokenEntry {
  token: string;
  name: string;
  scopes: readonly Scope[];
  tenant?: string | null;
  environments?: readonly string[] | null;
}

/** One token as an auth file or a data policy gives it. */
export const TokenSpec = z.strictObject({
  token: z.string().min(1, "must not be empty").regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces (it travels in a header)"),
  scopes: z.array(z.enum(SCOPES)).min(1, "must name at least one scope"),
  name: z.string().min(1).max(64).regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces (it is logged and audited)").optional(),
});

const TokenFile = z.object({ tokens: z.array(TokenSpec).min(1, "must hold at least one token") });

const digest = (token: string) => createHash("sha256").update(token, "utf8").digest();

/** The tokens of an auth file and the checks every request goes through. */
export class TokenAuth {
  private readonly entries: Array<TokenIdentity & { digest: Buffer }>;

  private constructor(entries: Array<TokenIdentity & { digest: Buffer }>) {
    this.entries = entries;
  }

  /** Tokens from entries already validated (a data policy's); a repeated token is invalid_config. */
  static fromEntries(entries: readonly TokenEntry[], source: string): TokenAuth {
    const seen = new Set<string>();
    return new TokenAuth(
      entries.map((t, i) => {
        if (seen.has(t.token)) throw new ValidationError("invalid_config", `${source}: tokens[${i}] repeats an earlier token ("${t.name}"); every token must be unique`);
        seen.add(t.token);
        const d = digest(t.token);
        return { name: t.name, id: d.toString("hex").slice(0, 12), scopes: [...new Set(t.scopes)], tenant: t.tenant ?? null, environments: t.environments ?? null, digest: d };
      }),
    );
  }

  /** Tokens from a parsed auth file; a malformed one is invalid_config naming the problem. */
  static fromConfig(value: unknown, source = "auth file"): TokenAuth {
    const parsed = TokenFile.safeParse(value);
    if (!parsed.success) throw new ValidationError("invalid_config", `${source}: ${formatIssues(parsed.error, "auth")}`);
    return TokenAuth.fromEntries(
      parsed.data.tokens.map((t, i) => ({ token: t.token, name: t.name ?? `token-${i}`, scopes: t.scopes })),
      source,
    );
  }

  /** Tokens from an auth file (see the module comment for its format). */
  static fromFile(path: string): TokenAuth {
    return TokenAuth.fromConfig(readJsonConfig(path, "--auth"), `--auth ${path}`);
  }


  /** Number of tokens. */
  get size(): number {
    return this.entries.length;
  }

  /** The identity of a presented token; a missing or unknown token is `unauthorized`. */
  authenticate(token: string | undefined): TokenIdentity {
    if (token === undefined || token === "") {
      throw new ServiceError("unauthorized", "this service needs a bearer token: send Authorization: Bearer <token>");
    }
    const presented = digest(token);
    let found: TokenIdentity | undefined;
    // Every entry is compared (no early exit), so timing says nothing about which token nearly matched.
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, presented) && !found) found = entry;
    }
    if (!found) throw new ServiceError("unauthorized", "the bearer token is not valid for this service");
    const { digest: _secret, ...identity } = found as TokenIdentity & { digest: Buffer };
    return identity;
  }

  /** Throw `forbidden` unless the identity holds `scope` (admin holds every scope). */
  authorize(identity: TokenIdentity, scope: Scope): void {
    if (identity.scopes.includes(scope) || identity.scopes.includes("admin")) return;
    throw new ServiceError("forbidden", `token "${identity.name}" lacks the scope "${scope}" this operation needs`, {
      needed: scope,
      held: [...identity.scopes],
    });
  }

  /** Authenticate then authorize; `open` routes pass without a token. */
  check(token: string | undefined, scope: RouteScope): TokenIdentity | null {
    if (scope === "open") return null;
    const identity = this.authenticate(token);
    this.authorize(identity, scope);
    return identity;
  }
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (typeof value !== "string") return undefined;
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(value);
  return match ? match[1] : undefined;
}

/** True for hosts only this machine can reach (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * True when a Host header names this machine by a loopback name (with or without a port), or is absent
 * (a non-browser HTTP/1.0 client). A browser tricked by DNS rebinding sends the attacker's name here.
 */
export function isLoopbackHostHeader(header: string | undefined): boolean {
  if (header === undefined) return true;
  const value = header.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(value);
  if (bracketed) return isLoopback(bracketed[1] as string);
  const named = /^([^:]+)(?::\d{1,5})?$/.exec(value);
  return named !== null && isLoopback(named[1] as string);
}

/** True when an Origin header is a page served from this machine's loopback (any scheme and port). */
export function isLoopbackOrigin(origin: string): boolean {
  try {
    return isLoopback(new URL(origin).hostname);
  } catch {
    return false;
  }
}
