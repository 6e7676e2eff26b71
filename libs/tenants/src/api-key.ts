import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** Every Shoal API key starts so: secret scanners and people can tell one at a glance. */
const SCHEME = "shoal";
/** Lower-case base32 without padding: never an underscore, so the key splits unambiguously. */
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
/** The public part: 8 base32 characters (40 random bits), unique per key, safe to log. */
const PREFIX = /^[a-z2-7]{8}$/;
/** The secret: 32 random bytes as base64url (43 characters). */
const SECRET = /^[A-Za-z0-9_-]{43}$/;

/** A key just made: the only time its full text exists outside its holder. */
export interface NewApiKey {
  /** `shoal_<prefix>_<secret>`: what the client sends as `Authorization: Bearer …`. */
  readonly key: string;
  /** Identifies the key in logs, the admin API and the store; not a secret. */
  readonly prefix: string;
  /** What the store keeps instead of the key. */
  readonly digest: string;
}

/** The parts of a presented key; undefined when it does not have a key's shape. */
export function parseApiKey(text: string): { prefix: string; secret: string } | undefined {
  const [scheme, prefix, ...rest] = text.split("_");
  // The secret may itself contain underscores (base64url).
  const secret = rest.join("_");
  if (scheme !== SCHEME || prefix === undefined || !PREFIX.test(prefix) || !SECRET.test(secret)) {
    return undefined;
  }
  return { prefix, secret };
}

/** A new random key. 256 bits of secret: no guessing, and a plain hash is enough to store it. */
export function generateApiKey(): NewApiKey {
  const prefixBytes = randomBytes(5);
  let prefix = "";
  let bits = 0;
  let value = 0;
  for (const byte of prefixBytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      prefix += BASE32.charAt((value >> bits) & 31);
    }
  }
  const key = `${SCHEME}_${prefix}_${randomBytes(32).toString("base64url")}`;
  return { key, prefix, digest: digestApiKey(key) };
}

/**
 * The SHA-256 of a key, hex. Keys are 256-bit random secrets, so a slow password hash would
 * add nothing but latency on every request: nobody can search that space from a digest.
 */
export function digestApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** Whether `key` hashes to `digest`, compared in constant time. */
export function matchesDigest(key: string, digest: string): boolean {
  const presented = Buffer.from(digestApiKey(key), "hex");
  const stored = Buffer.from(digest, "hex");
  return stored.length === presented.length && timingSafeEqual(stored, presented);
}
