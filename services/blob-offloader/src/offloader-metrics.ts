import type { BlobServerEvents } from "@shoal/blobs";
import { Counter, Gauge, type Registry } from "prom-client";

/**
 * The blob offloader's metrics: uploads by outcome and their bytes, refusals, deletes on
 * request, TTL sweeps, uploads in progress.
 */
export class OffloaderMetrics implements BlobServerEvents {
  readonly #uploads: Counter<"outcome">;
  readonly #bytes: Counter;
  readonly #refused: Counter<"reason">;
  readonly #deletes: Counter<"outcome">;
  readonly #swept: Counter;
  readonly #sweeps: Counter<"outcome">;

  constructor(registry: Registry, uploadsInProgress: () => number) {
    const registers = [registry];
    this.#uploads = new Counter({
      name: "shoal_offloader_uploads_total",
      help: "Uploads ended, by outcome: stored, failed (short, long, corrupt or idle), store_failed.",
      labelNames: ["outcome"],
      registers,
    });
    this.#bytes = new Counter({
      name: "shoal_offloader_stored_bytes_total",
      help: "Bytes of the blobs stored.",
      registers,
    });
    this.#refused = new Counter({
      name: "shoal_offloader_refused_uploads_total",
      help: "Uploads refused at their opening: bad_size, too_large, busy.",
      labelNames: ["reason"],
      registers,
    });
    this.#deletes = new Counter({
      name: "shoal_offloader_deletes_total",
      help: "Blobs deleted on request once their request was answered, by outcome (ok, failed).",
      labelNames: ["outcome"],
      registers,
    });
    this.#swept = new Counter({
      name: "shoal_offloader_swept_blobs_total",
      help: "Blobs deleted by the TTL sweep: orphans whose delete never came.",
      registers,
    });
    this.#sweeps = new Counter({
      name: "shoal_offloader_sweeps_total",
      help: "TTL sweeps run, by outcome (ok, failed).",
      labelNames: ["outcome"],
      registers,
    });
    new Gauge({
      name: "shoal_offloader_uploads_in_progress",
      help: "Uploads open now.",
      registers,
      collect() {
        this.set(uploadsInProgress());
      },
    });
  }

  refused(reason: "bad_size" | "too_large" | "busy"): void {
    this.#refused.inc({ reason });
  }

  ended(outcome: "stored" | "failed" | "store_failed", bytes: number): void {
    this.#uploads.inc({ outcome });
    if (outcome === "stored") this.#bytes.inc(bytes);
  }

  deleted(outcome: "ok" | "failed"): void {
    this.#deletes.inc({ outcome });
  }

  swept(result: number | "failed"): void {
    this.#sweeps.inc({ outcome: result === "failed" ? "failed" : "ok" });
    if (result !== "failed") this.#swept.inc(result);
  }
}
