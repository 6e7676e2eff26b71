import { create } from "@bufbuild/protobuf";
import { TimingsSchema, type Timings } from "@shoal/proto";
import type { PulledItem } from "./pulled-item.js";

/** Timings travel as uint32 µs (71 minutes); a longer or negative (clock skew) span saturates. */
export function uint32(micros: number): number {
  return Math.min(0xffff_ffff, Math.max(0, Math.round(micros)));
}

/** Enqueue → pull; zero when the item carries no enqueue time (it was not annotated by Shoal). */
export function queueWaitUs(p: PulledItem): number {
  const enqueued = Number(p.item.enqueuedUnixUs);
  return enqueued > 0 ? uint32(p.pulledAtUs - enqueued) : 0;
}

/** What a batch's answer tells ingress about where one item's time went. */
export interface BatchTimes {
  /** When the batch was handed to the sidecar, Unix µs. */
  readonly startedUs: number;
  readonly computeUs: number;
  /** Inputs in the whole batch. */
  readonly batchItems: number;
  readonly batchTokens: number;
}

/** The `Server-Timing` phases of one item of a batch: queue, batch formation, compute. */
export function itemTimings(p: PulledItem, batch: BatchTimes): Timings {
  return create(TimingsSchema, {
    queueUs: queueWaitUs(p),
    batchUs: uint32(batch.startedUs - p.pulledAtUs),
    computeUs: batch.computeUs,
    batchItems: batch.batchItems,
    batchTokens: batch.batchTokens,
  });
}
