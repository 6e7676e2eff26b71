/**
 * `Retry-After` in milliseconds (RFC 9110 §10.2.3: delay-seconds or an HTTP-date), or
 * undefined when absent or unreadable.
 */
export function retryAfterMs(value: string | null, nowMs: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // An HTTP-date always names its day and month; without this, V8 reads "1.5" as a date.
  if (!/[a-z]{3}/i.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
