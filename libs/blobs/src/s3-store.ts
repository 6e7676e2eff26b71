import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
  paginateListObjectsV2,
} from "@aws-sdk/client-s3";
import type { Logger } from "@shoal/telemetry";
import type { BlobStore, StoredBlob } from "./store.js";

export interface S3BlobOptions {
  readonly bucket: string;
  /** Key prefix blobs are stored under; the sweeper deletes only below it. @default "shoal-blobs/" */
  readonly prefix?: string;
  /**
   * The store's URL, for S3-compatible stores (MinIO, Ceph, R2, SeaweedFS...); addressing is
   * then path-style (`<endpoint>/<bucket>/<key>`), which they all serve. @default AWS S3
   */
  readonly endpoint?: string;
  /** @default "us-east-1" */
  readonly region?: string;
  /**
   * Static credentials; without them the AWS SDK's default chain applies (`AWS_ACCESS_KEY_ID`
   * and `AWS_SECRET_ACCESS_KEY`, a profile, web identity, instance metadata).
   */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

export const DEFAULT_S3_PREFIX = "shoal-blobs/";

/**
 * Blobs as objects of an S3 bucket, one `PutObject` each: the largest blob (64 MiB by default)
 * is far below S3's single-upload limit, and a single upload is atomic, so a failed one leaves
 * nothing behind, where an abandoned multipart upload would keep its parts until a lifecycle
 * rule removed them.
 */
export class S3Blobs implements BlobStore {
  readonly description: string;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;

  /** `logger` takes the SDK's own warnings, which otherwise go to the console. */
  constructor(options: S3BlobOptions, logger?: Logger) {
    this.#bucket = options.bucket;
    this.#prefix = options.prefix ?? DEFAULT_S3_PREFIX;
    this.description = `s3:${this.#bucket}/${this.#prefix}`;
    this.#client = new S3Client({
      region: options.region ?? "us-east-1",
      endpoint: options.endpoint,
      forcePathStyle: options.endpoint !== undefined,
      // An AWS bucket outside the configured region answers with a redirect to its own.
      followRegionRedirects: true,
      credentials: options.credentials,
      logger: logger === undefined ? undefined : sdkLogger(logger),
      // Since SDK 3.729 every upload carries a CRC32 in an aws-chunked trailer by default,
      // which several S3-compatible stores refuse; integrity is checked end to end by the
      // blob reference's SHA-256 anyway.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }

  /** Fails unless the bucket exists and these credentials may use it: run at start. */
  async check(): Promise<void> {
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }));
    } catch (err) {
      throw new Error(`S3 bucket ${this.#bucket} is not usable: ${describe(err)}`, {
        cause: err,
      });
    }
  }

  async put(name: string, size: number, body: ReadableStream<Uint8Array>): Promise<void> {
    const readable = Readable.fromWeb(body as WebReadableStream<Uint8Array>);
    // A body that errors (the upload broke off) aborts the request, so the store sees a short
    // body and keeps nothing; the SDK alone would leave the error unhandled.
    const abort = new AbortController();
    const broken = new Promise<never>((_resolve, reject) => {
      readable.once("error", (err) => {
        abort.abort(err);
        reject(err);
      });
    });
    const sent = this.#client.send(
      new PutObjectCommand({
        Bucket: this.#bucket,
        Key: this.#prefix + name,
        Body: readable,
        ContentLength: size,
      }),
      { abortSignal: abort.signal },
    );
    await Promise.race([sent, broken]);
  }

  async get(name: string): Promise<Uint8Array | null> {
    try {
      const out = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + name }),
      );
      return (await out.Body?.transformToByteArray()) ?? new Uint8Array(0);
    } catch (err) {
      if (err instanceof NoSuchKey) return null;
      throw err;
    }
  }

  async delete(name: string): Promise<void> {
    await this.#client.send(
      new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + name }),
    );
  }

  async list(): Promise<StoredBlob[]> {
    const blobs: StoredBlob[] = [];
    const pages = paginateListObjectsV2(
      { client: this.#client },
      { Bucket: this.#bucket, Prefix: this.#prefix },
    );
    for await (const page of pages) {
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined || object.LastModified === undefined) continue;
        blobs.push({
          name: object.Key.slice(this.#prefix.length),
          storedAtMs: object.LastModified.getTime(),
        });
      }
    }
    return blobs;
  }

  close(): void {
    this.#client.destroy();
  }
}

/**
 * The SDK logs every command at info, bodies included, and every failed one at error, though
 * the caller handles the failure (a blob already gone is expected); only its warnings (a
 * streaming request that could not be retried, say) are worth a line of ours.
 */
function sdkLogger(logger: Logger) {
  const ignore = (): void => undefined;
  return {
    trace: ignore,
    debug: ignore,
    info: ignore,
    warn: (...content: unknown[]) => {
      logger.warn({ sdk: content }, "S3 client warning");
    },
    error: ignore,
  };
}

function describe(err: unknown): string {
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const name = err instanceof Error ? err.name : String(err);
  if (status === 404) return "no such bucket";
  if (status === 403) return "access denied (check the credentials and the bucket policy)";
  return status === undefined ? `${name}: ${(err as Error).message}` : `${name} (HTTP ${status})`;
}
