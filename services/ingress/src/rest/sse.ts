import type { HttpResponse } from "./respond.js";

/**
 * A Server-Sent Events response that respects the client's pace: {@link send} resolves only
 * once the socket has taken the bytes (Node's `drain`), so the caller reads the next event
 * from the generation only when the client can take it — which is what holds the worker back.
 */
export class SseWriter {
  readonly #res: HttpResponse;
  #closed: boolean;

  constructor(res: HttpResponse, headers: Record<string, string>) {
    this.#res = res;
    this.#closed = res.destroyed;
    res.once("close", () => {
      this.#closed = true;
    });
    // The server lets an HTTP/1.1 client half-close once it has sent its request (it still
    // gets its answer), but a stream is open-ended: a client that closes its side mid-stream
    // has left, and its generation must stop now, not at the next write that fails.
    if (res.req.httpVersionMajor === 1) {
      res.req.socket.once("end", () => {
        this.#closed = true;
        res.destroy();
      });
    }
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // Proxies (nginx) buffer responses unless told not to, which would hold every token back.
      "x-accel-buffering": "no",
      ...headers,
    });
    // HTTP/2 sends headers with writeHead; HTTP/1.1 holds them for the first body chunk.
    if ("flushHeaders" in res) res.flushHeaders();
  }

  /** Whether the client has gone away. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Writes one `data:` event; resolves when it has been taken, or the client left. */
  async send(data: string): Promise<void> {
    if (this.#closed) return;
    const res = this.#res as { write(chunk: string): boolean };
    if (res.write(`data: ${data}\n\n`)) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        this.#res.off("drain", done);
        this.#res.off("close", done);
        resolve();
      };
      this.#res.once("drain", done);
      this.#res.once("close", done);
    });
  }

  end(): void {
    if (!this.#closed) this.#res.end();
  }
}
