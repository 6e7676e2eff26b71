/** Long enough for one scrape to read all its metrics from one snapshot. */
const SNAPSHOT_MS = 1_000;

/**
 * Shares one `read` among the collectors of one scrape: a registry collects its metrics all at
 * once, and each collector that needs the same source (a `stats` call, a server's consumer
 * info) would otherwise ask it again.
 */
export function perScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let snapshot: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = performance.now();
    if (snapshot === undefined || now - snapshot.at > SNAPSHOT_MS) {
      snapshot = { at: now, value: read() };
    }
    return snapshot.value;
  };
}
