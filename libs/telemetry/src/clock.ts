/**
 * Wall-clock time in microseconds since the Unix epoch, with sub-millisecond resolution.
 * `Date.now()` only has milliseconds, too coarse for the queue and batch waits Shoal reports;
 * comparing values from two hosts still includes their clock skew.
 */
export function wallClockUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}
