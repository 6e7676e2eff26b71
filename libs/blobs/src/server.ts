import { randomUUID } from "node:crypto";
import { headers as natsHeaders, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { extractContext, natsHeaderCarrier, type Logger } from "@shoal/telemetry";
import { BlobHeaders, BlobSubjects, OFFLOADER_QUEUE } from "./protocol.js";
import type { BlobStore } from "./store.js";
import { Upload } from "./upload.js";

export interface BlobServerOptions {
  readonly nc: NatsConnection;
  readonly store: BlobStore;
  /** Names this replica's chunk subjects. */
  readonly offloaderId: string;
  /** Largest blob accepted. @default 64 MiB */
  readonly maxBlobBytes?: number;
  /** Uploads at once; past it new ones are refused. @default 64 */
  readonly maxUploads?: number;
  /** An upload that sends nothing for this long is abandoned and discarded, ms. @default 30000 */
  readonly idleTimeoutMs?: number;
  /** Told what happened to each upload and delete (the offloader's metrics). */
  readonly events?: BlobServerEvents | undefined;
  readonly logger: Logger;
  /**
   * Each upload gets an `offloader.upload` span in the trace of the request it belongs to.
   * @default the global tracer (no-op unless one is installed)
   */
  readonly tracer?: Tracer;
}

/** What the server reports as it works, for metrics. */
export interface BlobServerEvents {
  /** An upload refused at its opening: a bad size, over the limit, or too many at once. */
  refused(reason: "bad_size" | "too_large" | "busy"): void;
  /**
   * An upload ended: `stored`, `failed` (the sender's fault: short, long, corrupt, idle) or
   * `store_failed` (the blob store refused it); `bytes` is the size it declared.
   */
  ended(outcome: "stored" | "failed" | "store_failed", bytes: number): void;
  /** A blob deleted on request (`ok`), or a delete that failed and is left to the sweep. */
  deleted(outcome: "ok" | "failed"): void;
}

export interface BlobServer {
  /** Uploads in progress. */
  readonly uploads: number;
  /** Stops taking uploads and waits for those in progress to end. */
  stop(): Promise<void>;
}

/**
 * The offloader's side of the protocol: takes uploads (one stored object each) and
 * deletes blobs on request. Any number of replicas share `open` and `remove` in a queue group;
 * an upload's chunks come to the replica that opened it.
 */
export function serveBlobs(options: BlobServerOptions): BlobServer {
  const { nc, store, logger, events } = options;
  const tracer = options.tracer ?? trace.getTracer("shoal-blob-offloader");
  const maxBlobBytes = options.maxBlobBytes ?? 64 * 1024 * 1024;
  const maxUploads = options.maxUploads ?? 64;
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const prefix = `${BlobSubjects.chunk}.${options.offloaderId}`;
  const uploads = new Map<string, { upload: Upload; idle: NodeJS.Timeout }>();
  // Why recent uploads failed, kept a while so that chunks the sender had already sent are
  // told the reason rather than that the upload does not exist.
  const failed = new Map<string, string>();

  const refuse = (msg: Msg, reason: string): void => {
    const hdrs = natsHeaders();
    hdrs.set(BlobHeaders.error, reason);
    msg.respond(new Uint8Array(0), { headers: hdrs });
  };

  const opens = nc.subscribe(BlobSubjects.open, {
    queue: OFFLOADER_QUEUE,
    callback: (err, msg) => {
      if (err !== null) return;
      const size = Number(msg.headers?.get(BlobHeaders.size) ?? NaN);
      if (!Number.isSafeInteger(size) || size < 0) {
        events?.refused("bad_size");
        refuse(msg, `${BlobHeaders.size} must be a non-negative integer`);
        return;
      }
      if (size > maxBlobBytes) {
        events?.refused("too_large");
        refuse(msg, `blob of ${size} bytes is over the ${maxBlobBytes}-byte limit`);
        return;
      }
      if (uploads.size >= maxUploads) {
        events?.refused("busy");
        refuse(msg, `blob offloader has ${maxUploads} uploads in progress; retry shortly`);
        return;
      }
      const id = randomUUID();
      const upload = new Upload(store, id, size);
      const span = tracer.startSpan(
        "offloader.upload",
        { kind: SpanKind.SERVER, attributes: { "shoal.blob": id, "shoal.bytes": size } },
        extractContext(natsHeaderCarrier(msg.headers)),
      );
      const idle = setTimeout(() => {
        upload.fail(`upload sent nothing for ${idleTimeoutMs} ms`);
      }, idleTimeoutMs);
      uploads.set(id, { upload, idle });
      void upload.done.finally(() => {
        clearTimeout(uploads.get(id)?.idle);
        uploads.delete(id);
        if (upload.storeError !== undefined) {
          logger.warn({ err: upload.storeError, blob: id }, "blob store failed an upload");
        }
        const outcome =
          upload.storeError !== undefined
            ? "store_failed"
            : upload.failure !== undefined
              ? "failed"
              : "stored";
        events?.ended(outcome, size);
        span.setAttribute("shoal.outcome", outcome);
        if (outcome !== "stored") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        span.end();
        if (upload.failure !== undefined) {
          failed.set(id, upload.failure);
          setTimeout(() => failed.delete(id), idleTimeoutMs).unref();
        }
      });
      const hdrs = natsHeaders();
      hdrs.set(BlobHeaders.upload, `${prefix}.${id}`);
      msg.respond(new Uint8Array(0), { headers: hdrs });
    },
  });

  const chunks = nc.subscribe(`${prefix}.*`, {
    callback: (err, msg) => {
      if (err !== null) return;
      const id = msg.subject.slice(prefix.length + 1);
      const entry = uploads.get(id);
      if (entry === undefined) {
        refuse(msg, failed.get(id) ?? "no such upload (it failed or timed out)");
        return;
      }
      entry.idle.refresh();
      entry.upload.accept(msg);
    },
  });

  const removes = nc.subscribe(BlobSubjects.remove, {
    queue: OFFLOADER_QUEUE,
    callback: (err, msg) => {
      if (err !== null) return;
      for (const name of msg.string().split("\n")) {
        if (name === "") continue;
        store.delete(name).then(
          () => events?.deleted("ok"),
          (cause: unknown) => {
            events?.deleted("failed");
            logger.warn({ err: cause, blob: name }, "blob delete failed; the TTL sweep retries");
          },
        );
      }
    },
  });

  return {
    get uploads() {
      return uploads.size;
    },
    async stop() {
      opens.unsubscribe();
      removes.unsubscribe();
      await Promise.allSettled([...uploads.values()].map((u) => u.upload.done));
      chunks.unsubscribe();
    },
  };
}
