import { headers as natsHeaders, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { ROOT_CONTEXT, type Context } from "@opentelemetry/api";
import { injectContext, natsHeaderCarrier } from "@shoal/telemetry";
import { BlobRefusedError, BlobStoreUnavailableError } from "./errors.js";
import { BlobHeaders, BlobSubjects, CHUNK_BYTES } from "./protocol.js";

/** A stored blob, as a work item references it. */
export interface BlobInfo {
  readonly name: string;
  readonly size: number;
  /** Lowercase hex SHA-256 of the content. */
  readonly sha256: string;
}

export interface BlobUploaderOptions {
  readonly nc: NatsConnection;
  /** Longest wait for any one answer of the offloader (open, each chunk), ms. @default 10000 */
  readonly timeoutMs?: number;
}

/**
 * The sending side of the offloader protocol (ingress). Bytes go in chunks, each sent only
 * after the previous one is stored, so an upload holds at most one chunk in flight.
 */
export class BlobUploader {
  readonly #nc: NatsConnection;
  readonly #timeoutMs: number;

  constructor(options: BlobUploaderOptions) {
    this.#nc = options.nc;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Stores `bytes`; the offloader's upload span continues `ctx`'s trace. */
  async put(bytes: Uint8Array, ctx: Context = ROOT_CONTEXT): Promise<BlobInfo> {
    const open = natsHeaders();
    open.set(BlobHeaders.size, String(bytes.byteLength));
    injectContext(ctx, natsHeaderCarrier(open));
    const opened = await this.#request(BlobSubjects.open, new Uint8Array(0), open);
    const subject = opened.headers?.get(BlobHeaders.upload) ?? "";
    if (subject === "")
      throw new BlobStoreUnavailableError("blob offloader gave no upload subject");
    for (let offset = 0; ; offset += CHUNK_BYTES) {
      const end = Math.min(bytes.byteLength, offset + CHUNK_BYTES);
      const last = end === bytes.byteLength;
      const hdrs = natsHeaders();
      if (last) hdrs.set(BlobHeaders.last, "1");
      const answer = await this.#request(subject, bytes.subarray(offset, end), hdrs);
      if (last) {
        return {
          name: answer.headers?.get(BlobHeaders.name) ?? "",
          size: bytes.byteLength,
          sha256: answer.headers?.get(BlobHeaders.sha256) ?? "",
        };
      }
    }
  }

  /** Asks an offloader to delete blobs; fire and forget, the TTL sweep covers a lost message. */
  remove(names: readonly string[]): void {
    if (names.length === 0 || this.#nc.isClosed()) return;
    this.#nc.publish(BlobSubjects.remove, names.join("\n"));
  }

  async #request(
    subject: string,
    data: Uint8Array,
    hdrs: ReturnType<typeof natsHeaders>,
  ): Promise<Msg> {
    let reply: Msg;
    try {
      reply = await this.#nc.request(subject, data, { timeout: this.#timeoutMs, headers: hdrs });
    } catch (cause) {
      throw new BlobStoreUnavailableError("blob offloader unavailable", { cause });
    }
    const refused = reply.headers?.get(BlobHeaders.error) ?? "";
    if (refused !== "") throw new BlobRefusedError(refused);
    return reply;
  }
}
