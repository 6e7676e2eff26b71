import { ingressReading, INGRESS_FAMILIES, type IngressReading } from "./latency.js";
import { parsePromText, type PromSample } from "./prom-text.js";

/** A metrics page larger than this is refused: the console reads a few families of it. */
const MAX_PAGE_BYTES = 16 * 1024 * 1024;

/**
 * Reads ingress's Prometheus endpoints (every replica's, or a supervisor's sum) for request
 * latency and queue arrivals. A target that does not answer within the timeout is named in
 * `failed`; the others still make the reading.
 */
export class IngressScraper {
  readonly #urls: readonly string[];
  readonly #timeoutMs: number;

  constructor(urls: readonly string[], timeoutMs = 2_000) {
    this.#urls = urls;
    this.#timeoutMs = timeoutMs;
  }

  describe(): string {
    return this.#urls.join(", ");
  }

  async read(): Promise<{ reading: IngressReading | undefined; failed: string[] }> {
    const samples: PromSample[] = [];
    const failed: string[] = [];
    await Promise.all(
      this.#urls.map(async (url) => {
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(this.#timeoutMs) });
          if (res.status !== 200) throw new Error(`answered ${res.status}`);
          const text = await res.text();
          if (text.length > MAX_PAGE_BYTES) throw new Error("metrics page too large");
          samples.push(...parsePromText(text, INGRESS_FAMILIES));
        } catch (err) {
          failed.push(`${url}: ${(err as Error).message}`);
        }
      }),
    );
    const reading =
      failed.length === this.#urls.length ? undefined : ingressReading(Date.now(), samples);
    return { reading, failed };
  }
}
