import { connect, type Socket } from "node:net";
import type { WorkMessageParts } from "@shoal/jetstream";
import {
  encodeFrame,
  FRAME_HEADER_BYTES,
  FrameDecoder,
  FrameTooLargeError,
  SidecarProtocolError,
  type FrameBody,
} from "@shoal/sidecar-client";
import { LocalQueueError } from "./local-queue-error.js";
import { LocalQueueUnavailableError } from "./local-queue-unavailable-error.js";
import {
  MAX_ITEMS_PER_REQUEST,
  parseResponse,
  partsFromWire,
  partsToWire,
  responseUint,
  type LocalQueueStats,
} from "./protocol.js";

export interface LocalQueueClientOptions {
  readonly socketPath: string;
  /** Longest a request may go unanswered (a take: on top of its wait). @default 5000 */
  readonly requestTimeoutMs?: number;
  /** After a failed connect, calls fail at once for this long instead of retrying each time. @default 1000 */
  readonly retryAfterMs?: number;
  /** Longest frame sent or accepted; must not exceed the queue's. @default 64 MiB */
  readonly maxFrameBytes?: number;
}

export interface TakeOptions {
  /** Most items wanted. */
  readonly max: number;
  /** How long the queue may wait for items to be put, when it holds none now. @default 0 */
  readonly waitMs?: number;
  /**
   * Ends a waiting take early. The take still resolves with what the queue answers, which may
   * be items it handed out just before the cancel arrived: the caller owns those.
   */
  readonly signal?: AbortSignal;
}

interface Pending {
  readonly resolve: (body: FrameBody) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * A worker's connection to the machine-local queue. It connects on first use and again after
 * a failure; while no queue answers, calls fail with {@link LocalQueueUnavailableError} and the
 * worker carries on over JetStream alone.
 */
export class LocalQueueClient {
  readonly #socketPath: string;
  readonly #timeoutMs: number;
  readonly #retryAfterMs: number;
  readonly #maxFrameBytes: number;
  readonly #pending = new Map<number, Pending>();
  #socket: Promise<Socket> | undefined;
  #downUntil = 0;
  #nextId = 1;
  #closed = false;

  constructor(options: LocalQueueClientOptions) {
    this.#socketPath = options.socketPath;
    this.#timeoutMs = options.requestTimeoutMs ?? 5_000;
    this.#retryAfterMs = options.retryAfterMs ?? 1_000;
    this.#maxFrameBytes = options.maxFrameBytes ?? 64 * 1024 ** 2;
  }

  /**
   * Hands items to the queue and returns how many it took: the first `n`. The caller still
   * owns the rest (the queue was full) and puts them back itself.
   */
  async put(model: string, items: readonly WorkMessageParts[]): Promise<number> {
    if (items.length === 0) return 0;
    let accepted = 0;
    for (let i = 0; i < items.length; i += MAX_ITEMS_PER_REQUEST) {
      const chunk = items.slice(i, i + MAX_ITEMS_PER_REQUEST);
      const body = await this.#request({ op: "put", model, items: chunk.map(partsToWire) });
      const n = Math.min(chunk.length, responseUint(body, "accepted"));
      accepted += n;
      if (n < chunk.length) break;
    }
    return accepted;
  }

  /** Takes up to `max` of a model's held items, waiting up to `waitMs` when none is held. */
  async take(model: string, options: TakeOptions): Promise<WorkMessageParts[]> {
    const waitMs = options.waitMs ?? 0;
    const body = await this.#request(
      { op: "take", model, max: Math.min(options.max, MAX_ITEMS_PER_REQUEST), wait_ms: waitMs },
      waitMs,
      options.signal,
    );
    const items = body["items"];
    if (!Array.isArray(items)) {
      throw new LocalQueueError("bad_frame", "local queue take response without items");
    }
    try {
      return items.map((it, i) => partsFromWire(it, i));
    } catch (err) {
      throw new LocalQueueError(
        "bad_frame",
        `local queue sent a malformed item: ${(err as Error).message}`,
      );
    }
  }

  async stats(): Promise<LocalQueueStats> {
    const body = await this.#request({ op: "stats" });
    return {
      held: responseUint(body, "held"),
      heldBytes: responseUint(body, "held_bytes"),
      accepted: responseUint(body, "accepted"),
      refused: responseUint(body, "refused"),
      handed: responseUint(body, "handed"),
      returned: responseUint(body, "returned"),
    };
  }

  /** Closes the connection; requests still in flight fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const socket = await this.#socket?.catch(() => undefined);
    socket?.destroy();
  }

  async #request(
    fields: Record<string, unknown>,
    extraMs = 0,
    signal?: AbortSignal,
  ): Promise<FrameBody> {
    const socket = await this.#connection();
    const id = this.#nextId++;
    const frame = encodeFrame({ id, ...fields });
    if (frame.byteLength - FRAME_HEADER_BYTES > this.#maxFrameBytes) {
      throw new LocalQueueError(
        "frame_too_large",
        new FrameTooLargeError(frame.byteLength - FRAME_HEADER_BYTES, this.#maxFrameBytes).message,
      );
    }
    return new Promise<FrameBody>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(
          new LocalQueueUnavailableError(
            `local queue did not answer ${String(fields["op"])} in time`,
          ),
        );
      }, this.#timeoutMs + extraMs);
      this.#pending.set(id, { resolve, reject, timer });
      socket.write(frame);
      if (signal !== undefined) {
        const cancel = (): void => {
          if (this.#pending.has(id) && !socket.destroyed) {
            socket.write(encodeFrame({ id: this.#nextId++, op: "cancel", target: id }));
          }
        };
        if (signal.aborted) cancel();
        else signal.addEventListener("abort", cancel, { once: true });
      }
    });
  }

  #connection(): Promise<Socket> {
    if (this.#closed)
      return Promise.reject(new LocalQueueUnavailableError("local queue client closed"));
    if (this.#socket !== undefined) return this.#socket;
    if (performance.now() < this.#downUntil) {
      return Promise.reject(
        new LocalQueueUnavailableError(`no local queue at ${this.#socketPath}`),
      );
    }
    const connecting: Promise<Socket> = new Promise<Socket>((resolve, reject) => {
      const socket = connect(this.#socketPath);
      socket.once("connect", () => {
        this.#attach(socket, connecting);
        resolve(socket);
      });
      socket.once("error", (err) => {
        // Before the connect this fails the call; after it, the close handler cleans up.
        this.#downUntil = performance.now() + this.#retryAfterMs;
        reject(
          new LocalQueueUnavailableError(`no local queue at ${this.#socketPath}`, { cause: err }),
        );
      });
      socket.once("close", () => {
        if (this.#socket === connecting) this.#socket = undefined;
      });
    });
    this.#socket = connecting;
    return connecting;
  }

  #attach(socket: Socket, connection: Promise<Socket>): void {
    const decoder = new FrameDecoder({ maxFrameBytes: this.#maxFrameBytes });
    socket.on("data", (chunk: Buffer) => {
      decoder.push(chunk);
      try {
        for (const body of decoder.frames()) this.#onResponse(body);
      } catch (err) {
        // A queue that sends what cannot be read is not one to keep talking to.
        const reason = err instanceof FrameTooLargeError || err instanceof SidecarProtocolError;
        socket.destroy(
          reason ? (err as Error) : new Error("local queue response failed", { cause: err }),
        );
      }
    });
    socket.on("close", () => {
      if (this.#socket === connection) this.#socket = undefined;
      const lost = new LocalQueueUnavailableError("local queue connection closed");
      for (const [id, p] of this.#pending) {
        clearTimeout(p.timer);
        this.#pending.delete(id);
        p.reject(lost);
      }
    });
  }

  #onResponse(body: FrameBody): void {
    const { id, error } = parseResponse(body);
    const p = this.#pending.get(id);
    if (p === undefined) return;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    if (error === undefined) p.resolve(body);
    else p.reject(error);
  }
}
