import type { NatsConnection } from "@nats-io/transport-node";
import { SpanStatusCode, type Tracer } from "@opentelemetry/api";
import { BlobMissingError, fetchBlob, type BlobStore } from "@shoal/blobs";
import { ErrorCode } from "@shoal/proto";
import type { Logger } from "@shoal/telemetry";
import { publishErrors } from "./answers.js";
import type { PulledItem, PulledMessage } from "./pulled-item.js";

export interface BlobInputsOptions {
  readonly nc: NatsConnection;
  /** Opens the store the offloader keeps blobs in; called on first use and after a failed open. */
  readonly openBlobs: () => Promise<BlobStore>;
  readonly workerId: string;
  readonly logger: Logger;
  /** Each item's reads get a `blob.fetch` span in its trace. */
  readonly tracer: Tracer;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Fetches the inputs the blob offloader holds for a batch's items, right before the batch
 * runs (never for items that are put back). An item whose blob is gone (its request was
 * answered, or the blob outlived its TTL) is answered with an error: no retry can bring it
 * back. A message whose fetch failed otherwise goes back to the queue for another try.
 */
export class BlobInputs {
  readonly #o: BlobInputsOptions;
  #store: Promise<BlobStore> | undefined;

  constructor(options: BlobInputsOptions) {
    this.#o = options;
  }

  /**
   * The batch's messages with every input filled in. An item whose blob is gone is answered
   * and left out of its message (a message left with no items is acked); a message whose
   * fetch failed otherwise goes back whole.
   */
  async resolve(batch: readonly PulledMessage[]): Promise<PulledMessage[]> {
    if (batch.every((m) => m.items.every((p) => blobsOf(p).length === 0))) return [...batch];
    const ready: PulledMessage[] = [];
    const gone: PulledItem[] = [];
    const emptied: PulledMessage[] = [];
    for (const m of batch) {
      try {
        const items: PulledItem[] = [];
        const lost: PulledItem[] = [];
        for (const p of m.items) {
          const filled = await this.#fill(p);
          if (filled === undefined) lost.push(p);
          else items.push(filled);
        }
        gone.push(...lost);
        if (items.length === 0) emptied.push(m);
        else ready.push({ ...m, items });
      } catch (err) {
        this.#o.logger.warn({ err, seq: m.msg.streamSequence }, "blob fetch failed; put back");
        m.msg.nak(200);
      }
    }
    if (gone.length > 0) {
      publishErrors(
        this.#o.nc,
        this.#o.workerId,
        gone.map((p) => p.item),
        ErrorCode.UNAVAILABLE,
        "an offloaded input is no longer available; send the request again",
      );
      await this.#o.nc.flush();
      for (const m of emptied) m.msg.ack();
    }
    return ready;
  }

  /**
   * The item with its offloaded inputs read; undefined when one is unusable (gone, corrupt,
   * not text), which no retry can mend. Other failures throw.
   */
  async #fill(p: PulledItem): Promise<PulledItem | undefined> {
    const blobs = blobsOf(p);
    if (blobs.length === 0) return p;
    const span = this.#o.tracer.startSpan(
      "blob.fetch",
      { attributes: { "shoal.request_id": p.item.requestId, "shoal.blobs": blobs.length } },
      p.parent,
    );
    try {
      const store = await this.#open();
      const texts = [...p.inputTexts];
      for (const blob of blobs) {
        if (blob.input >= texts.length) {
          throw new BlobMissingError(`offloaded input ${blob.name} names no input of its item`);
        }
        const bytes = await fetchBlob(store, {
          name: blob.name,
          size: Number(blob.size),
          sha256: blob.sha256,
        });
        texts[blob.input] = text(bytes, blob.name);
      }
      return { ...p, inputTexts: texts };
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      if (!(err instanceof BlobMissingError)) throw err;
      this.#o.logger.warn(
        { err, request_id: p.item.requestId, part: p.item.part },
        "offloaded input unusable; answering with an error",
      );
      return undefined;
    } finally {
      span.end();
    }
  }

  /** Releases the store's connections (an S3 client's sockets); after the last batch. */
  async close(): Promise<void> {
    const store = await this.#store?.catch(() => undefined);
    store?.close();
    this.#store = undefined;
  }

  // The Object Store bucket does not exist until the offloader first starts, so an open that
  // failed is tried again with the next offloaded item.
  #open(): Promise<BlobStore> {
    this.#store ??= this.#o.openBlobs().catch((err: unknown) => {
      this.#store = undefined;
      throw err;
    });
    return this.#store;
  }
}

function text(bytes: Uint8Array, name: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new BlobMissingError(`offloaded input ${name} is not UTF-8 text`);
  }
}

function blobsOf(
  p: PulledItem,
): readonly { input: number; name: string; size: bigint; sha256: string }[] {
  return p.item.task.case === "embed" ? p.item.task.value.blobs : [];
}
