import type { ServerResponse } from "node:http";

/** A page that has not read this much of what was sent is too slow; it is dropped. */
const MAX_UNSENT_BYTES = 1024 * 1024;

/**
 * The open pages' server-sent event streams. Every page gets the same bytes, serialised once
 * per snapshot, so a hundred open consoles cost a hundred socket writes a second and nothing
 * more; a page that stops reading (a laptop asleep) is dropped rather than buffered for.
 */
export class LivePages {
  readonly #pages = new Set<ServerResponse>();
  readonly #max: number;
  #last: string | undefined;

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#pages.size;
  }

  /** Starts an event stream on `res`; false (nothing written) when `max` pages are open. */
  open(res: ServerResponse): boolean {
    if (this.#pages.size >= this.#max) return false;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    // A new page draws at once, not a second later.
    res.write(`retry: 1000\n\n${this.#last ?? ""}`);
    this.#pages.add(res);
    res.on("close", () => this.#pages.delete(res));
    return true;
  }

  send(json: string): void {
    const event = `event: snapshot\ndata: ${json}\n\n`;
    this.#last = event;
    for (const res of this.#pages) {
      if (res.writableLength > MAX_UNSENT_BYTES) {
        this.#pages.delete(res);
        res.destroy();
        continue;
      }
      res.write(event);
    }
  }

  closeAll(): void {
    for (const res of this.#pages) res.end();
    this.#pages.clear();
  }
}
