import { createHash } from "node:crypto";
import { headers as natsHeaders, type Msg } from "@nats-io/transport-node";
import { BlobHeaders } from "./protocol.js";
import type { BlobStore } from "./store.js";

/**
 * One upload in progress at the offloader: chunk messages feed a stream the blob store
 * reads. A chunk is answered only when the store asks for the next one, so the sender waits
 * for the store instead of this process buffering what the store has not taken.
 */
export class Upload {
  readonly #declared: number;
  readonly #waiting: Msg[] = [];
  readonly #hash = createHash("sha256");
  #received = 0;
  #wake: (() => void) | undefined;
  #failure: string | undefined;
  #last: Msg | undefined;
  /** Settles when the upload is stored or has failed (with the client told why). */
  readonly done: Promise<void>;
  /** Why the store failed the upload, when it was the store and not the sender. */
  storeError: unknown;

  constructor(
    store: BlobStore,
    readonly name: string,
    declaredBytes: number,
  ) {
    this.#declared = declaredBytes;
    const stream = new ReadableStream<Uint8Array>(
      { pull: (controller) => this.#pull(controller) },
      { highWaterMark: 0 },
    );
    this.done = store.put(name, declaredBytes, stream).then(
      () => {
        this.#respond(this.#last, {
          [BlobHeaders.name]: name,
          [BlobHeaders.sha256]: this.#hash.digest("hex"),
        });
      },
      (err: unknown) => {
        // The store's own error names hosts and buckets: it is logged, the client told less.
        if (this.#failure === undefined) this.storeError = err;
        const reason = (this.#failure ??=
          "the blob store could not take the upload; retry shortly");
        for (const msg of [...this.#waiting, this.#last])
          this.#respond(msg, { [BlobHeaders.error]: reason });
        this.#waiting.length = 0;
      },
    );
  }

  /** Why the upload failed, once it has. */
  get failure(): string | undefined {
    return this.#failure;
  }

  /** A chunk arrived; one that breaks the upload (more bytes than declared) fails it. */
  accept(msg: Msg): void {
    if (this.#failure !== undefined || this.#last !== undefined) {
      this.#respond(msg, { [BlobHeaders.error]: this.#failure ?? "upload already complete" });
      return;
    }
    this.#received += msg.data.byteLength;
    if (this.#received > this.#declared) {
      this.#respond(msg, { [BlobHeaders.error]: "upload is larger than declared" });
      this.fail("upload is larger than declared");
      return;
    }
    this.#waiting.push(msg);
    this.#wake?.();
  }

  /** Ends the upload with an error: the store discards what it wrote. */
  fail(reason: string): void {
    this.#failure ??= reason;
    this.#wake?.();
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (this.#waiting.length === 0 && this.#failure === undefined) {
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    this.#wake = undefined;
    if (this.#failure !== undefined) {
      controller.error(new Error(this.#failure));
      return;
    }
    const msg = this.#waiting.shift() as Msg;
    if (msg.data.byteLength > 0) {
      this.#hash.update(msg.data);
      controller.enqueue(msg.data);
    }
    if (msg.headers?.get(BlobHeaders.last) === "1") {
      if (this.#received !== this.#declared) {
        this.#last = msg;
        this.fail(`upload ended after ${this.#received} of ${this.#declared} declared bytes`);
        controller.error(new Error(this.#failure));
        return;
      }
      this.#last = msg;
      controller.close();
    } else {
      this.#respond(msg, {});
    }
  }

  #respond(msg: Msg | undefined, values: Record<string, string>): void {
    if (msg === undefined) return;
    const entries = Object.entries(values);
    if (entries.length === 0) {
      msg.respond();
      return;
    }
    const hdrs = natsHeaders();
    for (const [key, value] of entries) hdrs.set(key, value);
    msg.respond(new Uint8Array(0), { headers: hdrs });
  }
}
