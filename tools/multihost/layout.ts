import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { natsServerBinary, sidecarBinary, type ManagedProcess } from "@shoal/testing";
import type { LabHost } from "./lab.js";

/** Ports every host uses for the same service (each host has its own port space). */
export const PORTS = {
  nats: 4222,
  natsMonitor: 8222,
  natsCluster: 6222,
  ingress: 8080,
  ingressOps: 9400,
  workerOps: 9401,
  loaderOps: 9402,
  loader: 8090,
} as const;

/** A production build to run processes from, and what its processes need in addition. */
export interface Build {
  /** What `build.ts --out` wrote. */
  readonly dir: string;
  /** Environment its processes get (an older release: where its catalog and bundle are). */
  readonly env: Readonly<Record<string, string>>;
}

export interface LayoutOptions {
  /** Per-run files: NATS stores, configs, sockets. */
  readonly dir: string;
  /** The directory of NATS users' passwords (`nats-users.ts` writes it). */
  readonly authDir: string;
  /** Work not acknowledged within this long is redelivered to another worker. */
  readonly ackWaitMs: number;
  /** Environment every process starts from (SHOAL_HOME, PATH…). */
  readonly env: NodeJS.ProcessEnv;
}

/**
 * A Shoal cluster laid out over lab hosts as it would be over machines: three NATS servers in
 * one JetStream cluster (streams with three replicas), ingress hosts, and worker hosts that
 * each run a model-loader and one worker with its sidecar. Services run from a production
 * build directory (`npm run build`), started by plain `node`.
 */
export class MultiHostLayout {
  readonly #o: LayoutOptions;
  readonly #nats = new Map<string, ManagedProcess>();
  readonly #services = new Map<string, ManagedProcess>();
  #generation = 0;

  constructor(options: LayoutOptions) {
    this.#o = options;
  }

  /** `nats://a:4222,nats://b:4222,…`: every service is given all the seeds. */
  natsUrls(natsHosts: readonly LabHost[]): string {
    return natsHosts.map((h) => `nats://${h.address}:${PORTS.nats}`).join(",");
  }

  /** Writes the server's config (cluster routes to every NATS host) and starts it. */
  async startNats(host: LabHost, peers: readonly LabHost[]): Promise<ManagedProcess> {
    const config = join(this.#o.authDir, `${host.name}.conf`);
    const store = join(this.#o.dir, "nats", host.name);
    await mkdir(store, { recursive: true });
    const routes = peers.map((p) => `nats-route://${p.address}:${PORTS.natsCluster}`);
    await writeFile(
      config,
      [
        `server_name: ${host.name}`,
        `listen: "0.0.0.0:${PORTS.nats}"`,
        `http: "0.0.0.0:${PORTS.natsMonitor}"`,
        // A client cut off is noticed within seconds, not the default minutes.
        `ping_interval: "2s"`,
        `ping_max: 3`,
        `jetstream { store_dir: "${store}" }`,
        `cluster { name: shoal, listen: "0.0.0.0:${PORTS.natsCluster}", routes: [${routes.map((r) => `"${r}"`).join(", ")}] }`,
        `include "auth.conf"`,
        "",
      ].join("\n"),
    );
    const server = host.spawn(natsServerBinary(), ["-c", config], this.#o.env);
    this.#nats.set(host.name, server);
    await server.waitForLine("stderr", (l) => l.includes("Server is ready"), 20_000, "ready");
    return server;
  }

  /** Kills the NATS server of `host` (SIGKILL: a crash, not a shutdown). */
  async killNats(host: LabHost): Promise<void> {
    await this.#nats.get(host.name)?.terminate("SIGKILL", 0);
  }

  /** Runs `service` of the build as NATS user `user`, in `host`. */
  #service(
    key: string,
    host: LabHost,
    build: Build,
    service: string,
    user: string,
    env: Record<string, string>,
    args: readonly string[] = [],
  ): ManagedProcess {
    const child = host.spawn(
      "node",
      ["--enable-source-maps", join(build.dir, service, "main.mjs"), ...args],
      {
        ...this.#o.env,
        NATS_USER: user,
        NATS_PASSWORD_FILE: join(this.#o.authDir, "passwords", user),
        LOG_LEVEL: "info",
        ...build.env,
        ...env,
      },
    );
    this.#services.set(key, child);
    return child;
  }

  /** Makes every stream and bucket with three replicas, as the chart's bootstrap job does. */
  async bootstrap(host: LabHost, build: Build, natsUrl: string): Promise<void> {
    const child = this.#service(
      "bootstrap",
      host,
      build,
      "nats-bootstrap",
      "bootstrap",
      {
        NATS_URL: natsUrl,
        SHOAL_STREAM_REPLICAS: "3",
        SHOAL_ACK_WAIT_MS: String(this.#o.ackWaitMs),
      },
      ["bootstrap"],
    );
    const exit = await child.exited;
    if (exit.code !== 0)
      throw new Error(`bootstrap failed (${JSON.stringify(exit)}):\n${child.output()}`);
  }

  startIngress(host: LabHost, build: Build, natsUrl: string): ManagedProcess {
    return this.#service(`ingress@${host.name}`, host, build, "ingress", "ingress", {
      NATS_URL: natsUrl,
      SHOAL_HOST: "0.0.0.0",
      SHOAL_PORT: String(PORTS.ingress),
      // A private network of the test's own: no API keys.
      SHOAL_AUTH: "none",
      SHOAL_METRICS_PORT: String(PORTS.ingressOps),
      SHOAL_METRICS_HOST: "0.0.0.0",
    });
  }

  startLoader(host: LabHost, build: Build, natsUrl: string): ManagedProcess {
    return this.#service(`model-loader@${host.name}`, host, build, "model-loader", "model-loader", {
      NATS_URL: natsUrl,
      SHOAL_NODE_ID: host.name,
      SHOAL_HOST: "0.0.0.0",
      SHOAL_LOADER_PORT: String(PORTS.loader),
      SHOAL_HEARTBEAT_MS: "1000",
      SHOAL_METRICS_PORT: String(PORTS.loaderOps),
      SHOAL_METRICS_HOST: "0.0.0.0",
    });
  }

  /**
   * Starts a worker with its sidecar; each start is a new worker id, as a new pod would be.
   * @returns the worker id
   */
  async startWorker(host: LabHost, build: Build, natsUrl: string): Promise<string> {
    const id = `${host.name}-w${++this.#generation}`;
    const dir = join(this.#o.dir, id);
    await mkdir(dir, { recursive: true });
    this.#service(`worker@${host.name}`, host, build, "worker", "worker", {
      NATS_URL: natsUrl,
      SHOAL_NODE_ID: host.name,
      SHOAL_WORKER_ID: id,
      SHOAL_WORKER_MEMORY_BYTES: String(2 * 1024 ** 3),
      SHOAL_SIDECAR_BIN: sidecarBinary(),
      SHOAL_SIDECAR_SOCKET: join(dir, "sidecar.sock"),
      SHOAL_ACK_WAIT_MS: String(this.#o.ackWaitMs),
      SHOAL_HEARTBEAT_MS: "1000",
      SHOAL_METRICS_PORT: String(PORTS.workerOps),
      SHOAL_METRICS_HOST: "0.0.0.0",
    });
    return id;
  }

  /** The running process started under `key` (`ingress@edge-a`, `worker@gpu-a`, …). */
  process(key: string): ManagedProcess {
    const child = this.#services.get(key);
    if (child === undefined) throw new Error(`nothing started as ${key}`);
    return child;
  }

  /** Every service and NATS server process, for logs when a test fails. */
  outputs(): string {
    const all = [...this.#nats.entries(), ...this.#services.entries()];
    return all.map(([k, p]) => `--- ${k} ---\n${p.output()}`).join("\n");
  }
}
