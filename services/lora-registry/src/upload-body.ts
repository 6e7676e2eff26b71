import type { IncomingMessage } from "node:http";
import { PayloadTooLargeError, UnsupportedMediaTypeError, UploadIdleError } from "./errors.js";

/**
 * Media types an archive may arrive as. curl's `--data-binary` sends
 * `application/x-www-form-urlencoded` unless told otherwise, so that is accepted too: the body
 * is sniffed (gzip magic, tar checksums) whatever it is labelled.
 */
const ARCHIVE_TYPES = new Set([
  "application/x-tar",
  "application/tar",
  "application/gzip",
  "application/x-gzip",
  "application/x-compressed-tar",
  "application/octet-stream",
  "application/x-www-form-urlencoded",
]);

/**
 * Refuses, from the headers alone, what cannot be an acceptable upload: a declared length over
 * the limit (so that body is never read), or a type that is plainly not an archive.
 *
 * @throws PayloadTooLargeError, UnsupportedMediaTypeError
 */
export function checkUploadHeaders(req: IncomingMessage, maxBytes: number): void {
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw new PayloadTooLargeError(
      `the upload is ${declared} bytes; the limit is ${maxBytes} bytes`,
    );
  }
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === "" || ARCHIVE_TYPES.has(type)) return;
  if (type === "multipart/form-data") {
    throw new UnsupportedMediaTypeError(
      "send the archive itself as the body (curl --data-binary @adapter.tar), not a form",
    );
  }
  throw new UnsupportedMediaTypeError(
    `the body must be a tar or tar.gz archive (application/x-tar or application/gzip), not ${type}`,
  );
}

/**
 * The request body as a stream of chunks, cut off with {@link PayloadTooLargeError} the moment
 * it passes `maxBytes` and with {@link UploadIdleError} when no chunk arrives for
 * `idleTimeoutMs`. Stopping early leaves the request undestroyed, so an error can still be
 * answered on its connection.
 */
export async function* uploadBody(
  req: IncomingMessage,
  limits: { readonly maxBytes: number; readonly idleTimeoutMs: number },
): AsyncGenerator<Buffer> {
  const chunks = req.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
  let received = 0;
  for (;;) {
    const next = await withIdleTimeout(chunks.next(), limits.idleTimeoutMs);
    if (next.done === true) return;
    received += next.value.length;
    if (received > limits.maxBytes) {
      throw new PayloadTooLargeError(`the upload is over the limit of ${limits.maxBytes} bytes`);
    }
    yield next.value;
  }
}

function withIdleTimeout<T>(pending: Promise<T>, idleTimeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // The read outlives us; its settling (or the socket's destruction) must not go unhandled.
      pending.catch(() => undefined);
      reject(new UploadIdleError(`the upload sent nothing for ${idleTimeoutMs} ms`));
    }, idleTimeoutMs);
  });
  return Promise.race([pending, idle]).finally(() => {
    clearTimeout(timer);
  });
}
