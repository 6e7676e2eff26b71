import type { NatsConnection } from "@nats-io/transport-node";
import { SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { BlobRefusedError, BlobStoreUnavailableError, BlobUploader } from "@shoal/blobs";
import { UnavailableError, type BlobOffload } from "@shoal/gateway";

/**
 * The gateway's offload through the blob-offloader service. Every failure to store is
 * UNAVAILABLE (503) before anything is queued: the client retries, nothing is half-accepted.
 */
export function blobOffload(
  nc: NatsConnection,
  thresholdBytes: number,
  tracer: Tracer,
): BlobOffload {
  const uploader = new BlobUploader({ nc });
  return {
    thresholdBytes,
    async put(bytes, ctx) {
      const span = tracer.startSpan(
        "blob.offload",
        { attributes: { "shoal.bytes": bytes.byteLength } },
        ctx,
      );
      try {
        return await uploader.put(bytes, trace.setSpan(ctx, span));
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        if (err instanceof BlobStoreUnavailableError) {
          throw new UnavailableError("the blob offloader is unavailable; retry shortly", {
            cause: err,
          });
        }
        if (err instanceof BlobRefusedError) {
          throw new UnavailableError(`the blob offloader refused the input: ${err.message}`, {
            cause: err,
          });
        }
        throw err;
      } finally {
        span.end();
      }
    },
    remove: (names) => {
      uploader.remove(names);
    },
  };
}
