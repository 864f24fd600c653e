/**
 * Signed snapshots (DESIGN §7). A snapshot the service hands to a client carries `signature`: an
 * HMAC-SHA256, under the server's key, of the snapshot's canonical JSON (keys sorted, no whitespace)
 * without that field. Canonical JSON makes the signature survive a client's re-serialization (Python's
 * json.dumps with other spacing or key order gives the same values, so the same canonical bytes). A
 * fleet of servers that share a key accepts each other's snapshots; any edit, or a snapshot signed
 * under another key, is refused with `invalid_snapshot`.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { ValidationError } from "../core/errors.js";
import { canonicalJson } from "../core/json.js";

/** The field of a snapshot that holds its signature. */
export const SIGNATURE_FIELD = "signature";
const PREFIX = "hmac-sha256:";

/** A random key (hex): what a server uses when none is configured (its snapshots then die with it). */
export function randomSnapshotKey(): string {
  return randomBytes(32).toString("hex");
}

/**
 * A key from a file (`--snapshot-key FILE`): its trimmed contents, at least 32 characters. Servers that
 * must accept each other's snapshots read the same file.
 */
export function readSnapshotKey(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (error) {
    throw new ValidationError("invalid_config", `--snapshot-key ${path}: cannot read the file: ${(error as Error).message}`);
  }
  if (text.length < 32) throw new ValidationError("invalid_config", `--snapshot-key ${path}: the key must be at least 32 characters (got ${text.length})`);
  return Buffer.from(text, "utf8").toString("hex");
}

/** Signs and checks snapshots under one key. */
export class SnapshotSigner {
  private readonly key: Buffer;

  constructor(keyHex: string) {
    this.key = Buffer.from(keyHex, "hex");
    if (this.key.length < 16) throw new ValidationError("invalid_config", "the snapshot key must be at least 16 bytes");
  }

  /** The snapshot with its `signature` field set (any earlier signature replaced). */
  sign<T extends object>(snapshot: T): T & { signature: string } {
    const { [SIGNATURE_FIELD]: _old, ...body } = snapshot as Record<string, unknown>;
    return { ...(body as T), [SIGNATURE_FIELD]: this.mac(body) };
  }

  /** Throw invalid_snapshot unless `snapshot` carries a valid signature of this key. */
  verify(snapshot: unknown): void {
    if (typeof snapshot !== "object" || snapshot === null || Array.isArray(snapshot)) {
      throw new ValidationError("invalid_snapshot", "a snapshot must be a JSON object");
    }
    const { [SIGNATURE_FIELD]: signature, ...body } = snapshot as Record<string, unknown>;
    if (typeof signature !== "string") {
      throw new ValidationError("invalid_snapshot", `the snapshot is not signed by this service (no "${SIGNATURE_FIELD}" field); only snapshots this service (or a server sharing its --snapshot-key) gave out can be restored, unless the token has the admin scope`);
    }
    let expected: string;
    try {
      expected = this.mac(body);
    } catch (error) {
      throw new ValidationError("invalid_snapshot", `the snapshot cannot be checked: ${(error as Error).message}`);
    }
    const a = Buffer.from(signature);
    const b = Buffer.from(expected);
    if (a.length !== b.length || !timingSafeEqual(a, b)) {
      throw new ValidationError("invalid_snapshot", "the snapshot's signature does not match its contents: it was altered, or signed by a server with another --snapshot-key");
    }
  }

  private mac(body: unknown): string {
    return PREFIX + createHmac("sha256", this.key).update(canonicalJson(body)).digest("base64url");
  }
}
