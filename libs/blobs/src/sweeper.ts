import type { Logger } from "@shoal/telemetry";
import type { BlobStore } from "./store.js";

export interface SweeperOptions {
  readonly store: BlobStore;
  /** Blobs older than this are deleted, whoever holds them, ms. */
  readonly ttlMs: number;
  /** Time between sweeps, ms. */
  readonly intervalMs: number;
  /** Told how many blobs each sweep deleted, or that it failed (the offloader's metrics). */
  readonly onSweep?: ((swept: number | "failed") => void) | undefined;
  readonly logger: Logger;
}

/**
 * Deletes every blob older than its TTL. Blobs are normally deleted as soon as their request
 * is answered; this catches the ones whose ingress died first or whose delete was lost, so
 * nothing stays in the store much past the TTL.
 */
export async function sweepExpired(
  store: BlobStore,
  ttlMs: number,
  nowMs: number = Date.now(),
): Promise<string[]> {
  const swept: string[] = [];
  for (const blob of await store.list()) {
    if (nowMs - blob.storedAtMs <= ttlMs) continue;
    await store.delete(blob.name);
    swept.push(blob.name);
  }
  return swept;
}

/** Runs {@link sweepExpired} every `intervalMs` until stopped. */
export function startSweeper(options: SweeperOptions): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running
      .then(async () => {
        const swept = await sweepExpired(options.store, options.ttlMs);
        options.onSweep?.(swept.length);
        if (swept.length > 0) {
          options.logger.info({ blobs: swept.length }, "expired blobs swept");
        }
      })
      .catch((err: unknown) => {
        options.onSweep?.("failed");
        options.logger.warn({ err }, "blob sweep failed; retrying next interval");
      });
  }, options.intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
