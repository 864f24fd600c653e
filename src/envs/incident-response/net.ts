/**
 * IPv4 addresses and CIDR ranges: parsing, canonical text and coverage. Firewall rules, the agent's
 * report and the verifier all go through these, so "1.2.3.4", "1.2.3.4/32" and "001.2.3.4" mean one thing.
 */

/** A parsed range: network base (uint32) and prefix length. */
export interface Cidr {
  base: number;
  bits: number;
}

const OCTET = /^(0|[1-9][0-9]{0,2})$/;

/** The address as a uint32, or null when `text` is not a dotted-quad IPv4 address. */
export function parseIPv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!OCTET.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    value = value * 256 + n;
  }
  return value;
}

/** Dotted-quad text of a uint32 address. */
export function formatIPv4(value: number): string {
  return `${Math.floor(value / 16777216) % 256}.${Math.floor(value / 65536) % 256}.${Math.floor(value / 256) % 256}.${value % 256}`;
}

/** An address ("1.2.3.4", a /32) or range ("1.2.3.0/24"), or null when malformed or with host bits set. */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf("/");
  const addr = parseIPv4(slash < 0 ? text : text.slice(0, slash));
  if (addr === null) return null;
  let bits = 32;
  if (slash >= 0) {
    const raw = text.slice(slash + 1);
    if (!/^(0|[1-9][0-9]?)$/.test(raw)) return null;
    bits = Number(raw);
    if (bits > 32) return null;
  }
  const size = 2 ** (32 - bits);
  // Host bits set ("1.2.3.4/24") is almost always a typo for a different range: refuse it rather than guess.
  if (addr % size !== 0) return null;
  return { base: addr, bits };
}

/** Canonical text: a bare address for a /32, "base/bits" otherwise. */
export function formatCidr(cidr: Cidr): string {
  return cidr.bits === 32 ? formatIPv4(cidr.base) : `${formatIPv4(cidr.base)}/${cidr.bits}`;
}

/** Canonical form of an address or range text, or null when malformed. */
export function canonicalCidr(text: string): string | null {
  const parsed = parseCidr(text.trim());
  return parsed ? formatCidr(parsed) : null;
}

/** True when the range covers the address (uint32). */
export function covers(cidr: Cidr, address: number): boolean {
  const size = 2 ** (32 - cidr.bits);
  return address >= cidr.base && address < cidr.base + size;
}

/** True for RFC 1918 private addresses (the fleet's internal network). */
export function isPrivate(address: number): boolean {
  const a = Math.floor(address / 16777216);
  const b = Math.floor(address / 65536) % 256;
  return a === 10 || (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168);
}
