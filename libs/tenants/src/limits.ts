/**
 * What one tenant may take, per ingress process: sustained rates with a one-second burst, and
 * requests in flight. Unset fields are unlimited.
 */
export interface TenantLimits {
  /** Requests admitted per second (token bucket, burst one second's worth). */
  readonly requestsPerSecond?: number;
  /**
   * Model tokens per second, input and output together, charged as answers report them: a
   * tenant in debt is refused until the rate has paid it back.
   */
  readonly tokensPerSecond?: number;
  /** Requests held at once (queued, running or streaming). */
  readonly maxConcurrent?: number;
}

export const NO_LIMITS: TenantLimits = Object.freeze({});

const FIELDS = ["requestsPerSecond", "tokensPerSecond", "maxConcurrent"] as const;

/** A limit that is not a positive number; the message names the field. */
export class LimitsError extends Error {
  override readonly name = "LimitsError";
}

/**
 * Checks limits from a record or a request body: only the known fields, each a positive
 * finite number (`maxConcurrent` an integer).
 *
 * @throws LimitsError
 */
export function checkLimits(value: unknown): TenantLimits {
  if (value === undefined || value === null) return NO_LIMITS;
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new LimitsError("limits must be an object");
  }
  const raw = value as Record<string, unknown>;
  const unknown = Object.keys(raw).find((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined) {
    throw new LimitsError(`limits.${unknown} is not a limit (${FIELDS.join(", ")})`);
  }
  const limits: Record<string, number> = {};
  for (const field of FIELDS) {
    const v = raw[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
      throw new LimitsError(`limits.${field} must be a positive number`);
    }
    if (field === "maxConcurrent" && !Number.isInteger(v)) {
      throw new LimitsError("limits.maxConcurrent must be a whole number");
    }
    limits[field] = v;
  }
  return limits;
}
