import type { SidecarClient } from "@shoal/sidecar-client";
import type { Logger } from "@shoal/telemetry";
import type { SidecarProcess } from "./sidecar-process.js";

export interface SidecarSupervisorOptions {
  readonly start: () => Promise<{ process: SidecarProcess; client: SidecarClient }>;
  readonly logger: Logger;
}

/**
 * Keeps one sidecar alive: when it exits unexpectedly the supervisor starts a new one and
 * reloads the models; callers awaiting `client()` wait for it meanwhile.
 */
export class SidecarSupervisor {
  readonly #o: SidecarSupervisorOptions;
  #current: Promise<{ process: SidecarProcess; client: SidecarClient }> | undefined;
  #stopping = false;

  constructor(options: SidecarSupervisorOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    await this.#launch();
  }

  async client(): Promise<SidecarClient> {
    if (this.#current === undefined) throw new Error("sidecar not started");
    return (await this.#current).client;
  }

  /**
   * Replaces a sidecar that stalled (a batch outlived its timeout): kills it, and the exit
   * handler starts a fresh one. Calls while a restart is under way are no-ops.
   */
  async restart(reason: string): Promise<void> {
    const current = await this.#current?.catch(() => undefined);
    if (current === undefined || this.#stopping) return;
    this.#o.logger.error({ reason }, "killing a stalled sidecar");
    current.process.kill();
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const current = await this.#current?.catch(() => undefined);
    await current?.client.close();
    await current?.process.stop();
  }

  #launch(): Promise<{ process: SidecarProcess; client: SidecarClient }> {
    const launched = this.#o.start();
    this.#current = launched;
    void launched.then(
      ({ process }) =>
        process.exited.then((code) => {
          if (this.#stopping) return;
          this.#o.logger.error({ code }, "sidecar exited; restarting it");
          void this.#relaunch(1);
        }),
      () => undefined,
    );
    return launched;
  }

  /** Retries a failed restart with backoff; pullers keep waiting on `client()` meanwhile. */
  async #relaunch(attempt: number): Promise<void> {
    try {
      await this.#launch();
    } catch (err) {
      const delayMs = Math.min(10_000, 500 * 2 ** attempt);
      this.#o.logger.error({ err, attempt, delay_ms: delayMs }, "sidecar restart failed");
      await new Promise((r) => setTimeout(r, delayMs));
      if (!this.#stopping) await this.#relaunch(attempt + 1);
    }
  }
}
