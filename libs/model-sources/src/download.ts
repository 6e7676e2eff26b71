import { createHash } from "node:crypto";
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import type { Logger } from "@shoal/telemetry";
import type { FileRequest } from "./http-source.js";
import type { MarkerFile } from "./marker.js";
import { describeError, ModelSourceError } from "./model-source-error.js";
import type { ModelProgressEvent } from "./options.js";
import { reportProgress } from "./progress.js";

/** Everything one file download needs. */
export interface DownloadOptions {
  readonly modelId: string;
  /** Path relative to the model directory; also the name in errors and progress events. */
  readonly file: string;
  readonly request: FileRequest;
  /** Absolute path to write; must not exist yet. */
  readonly dest: string;
  /** When true a 404 yields `undefined` instead of an error. */
  readonly optional: boolean;
  readonly maxFileBytes: number;
  readonly fetch: typeof globalThis.fetch;
  readonly onProgress: ((event: ModelProgressEvent) => void) | undefined;
  readonly logger: Logger | undefined;
}

/** Progress is reported at most this often (plus at the start and the end of each file). */
const PROGRESS_STEP_BYTES = 1024 * 1024;

/**
 * Streams one file to `dest`, hashing as it goes, and returns its size and sha256; `undefined`
 * for an optional file the server does not have.
 *
 * Nothing is buffered whole: each chunk is written before the next is read. The size limit is
 * checked against `Content-Length` before the body is read and again on every chunk, because a
 * chunked response declares no length. A body that ends short of its `Content-Length` is an
 * error even if fetch did not notice.
 *
 * On failure `dest` may hold a partial file; the caller discards the whole staging directory.
 *
 * @throws ModelSourceError
 */
export async function downloadFile(options: DownloadOptions): Promise<MarkerFile | undefined> {
  const { modelId, file, request, maxFileBytes } = options;
  const where = { modelId, file, url: request.url };
  let response: Response;
  try {
    response = await options.fetch(request.url, {
      // Identity, so Content-Length counts the bytes we store and a size check means something.
      headers: { ...request.headers, "accept-encoding": "identity" },
      redirect: "follow",
    });
  } catch (cause) {
    throw new ModelSourceError("transfer", `request failed: ${describeError(cause)}`, {
      ...where,
      cause,
    });
  }

  if (response.status === 404 || response.status === 410) {
    await discard(response);
    if (options.optional) {
      options.logger?.debug({ file }, "optional model file not at source");
      return undefined;
    }
    throw new ModelSourceError(
      "not-found",
      `required file not found (HTTP ${response.status})`,
      where,
    );
  }
  if (response.status === 401 || response.status === 403) {
    await discard(response);
    throw new ModelSourceError(
      "unauthorized",
      `HTTP ${response.status}; check HF_TOKEN for gated or private repos`,
      where,
    );
  }
  if (!response.ok) {
    await discard(response);
    throw new ModelSourceError("transfer", `HTTP ${response.status}`, where);
  }

  const declared = contentLength(response);
  if (declared !== undefined && declared > maxFileBytes) {
    await discard(response);
    throw new ModelSourceError(
      "too-large",
      `Content-Length ${declared} exceeds maxFileBytes ${maxFileBytes}`,
      where,
    );
  }
  // A server may compress despite `identity`; then the declared length is of the encoded body.
  const encoding = response.headers.get("content-encoding");
  const expected = encoding === null || encoding === "identity" ? declared : undefined;

  await mkdir(dirname(options.dest), { recursive: true });
  const hash = createHash("sha256");
  let bytesDone = 0;
  let reported = 0;
  const progress = (): void => {
    reported = bytesDone;
    reportProgress(options.onProgress, options.logger, {
      modelId,
      file,
      bytesDone,
      bytesTotal: declared,
    });
  };

  const handle = await open(options.dest, "wx");
  try {
    progress();
    // undici's body type is loose; its chunks are always Uint8Array.
    const body = response.body as AsyncIterable<Uint8Array> | null;
    if (body !== null) {
      try {
        for await (const chunk of body) {
          bytesDone += chunk.byteLength;
          if (bytesDone > maxFileBytes) {
            throw new ModelSourceError(
              "too-large",
              `body exceeds maxFileBytes ${maxFileBytes} after ${bytesDone} bytes`,
              where,
            );
          }
          if (expected !== undefined && bytesDone > expected) {
            throw new ModelSourceError(
              "transfer",
              `body is longer than its Content-Length ${expected}`,
              where,
            );
          }
          hash.update(chunk);
          await writeAll(handle, chunk, where);
          if (bytesDone - reported >= PROGRESS_STEP_BYTES) progress();
        }
      } catch (cause) {
        if (cause instanceof ModelSourceError) throw cause;
        throw new ModelSourceError(
          "transfer",
          `body failed after ${bytesDone} bytes: ${describeError(cause)}`,
          { ...where, cause },
        );
      }
    }
    if (expected !== undefined && bytesDone !== expected) {
      throw new ModelSourceError(
        "transfer",
        `body ended after ${bytesDone} of ${expected} bytes (Content-Length)`,
        where,
      );
    }
    if (bytesDone !== reported || bytesDone === 0) progress();
    // On disk before the marker that vouches for it is written.
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { name: file, size: bytesDone, sha256: hash.digest("hex") };
}

async function writeAll(
  handle: FileHandle,
  chunk: Uint8Array,
  where: { modelId: string; file: string; url: string },
): Promise<void> {
  try {
    let offset = 0;
    while (offset < chunk.byteLength) {
      const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
      offset += bytesWritten;
    }
  } catch (cause) {
    throw new ModelSourceError("io", `cannot write: ${describeError(cause)}`, { ...where, cause });
  }
}

function contentLength(response: Response): number | undefined {
  const header = response.headers.get("content-length");
  if (header === null || !/^\d+$/.test(header.trim())) return undefined;
  const value = Number(header.trim());
  return Number.isSafeInteger(value) ? value : Number.MAX_SAFE_INTEGER;
}

/** Releases the connection of a response whose body we do not want. */
async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // The connection is being torn down anyway; nothing useful to report.
  }
}
