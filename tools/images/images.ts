import { natsServerBinary, sidecarBinary } from "@shoal/testing";

/** The OCI images `npm run images` builds: one per deployable process. */
export interface ImageSpec {
  /** The image is `shoal-<name>`. */
  readonly name: string;
  /** The production build it carries (`dist/<build>`), if any. */
  readonly build?: string;
  /** Extra binaries copied to /usr/local/bin: their path on this machine, by file name. */
  readonly binaries?: () => Record<string, string>;
  readonly entrypoint: readonly string[];
  readonly cmd?: readonly string[];
  readonly env?: readonly string[];
  readonly ports: readonly number[];
  /** Whether the image needs Node.js (every service but nats). */
  readonly node: boolean;
  /** How the smoke test starts it and asks whether it is healthy. */
  readonly smoke: SmokeSpec;
}

export interface SmokeSpec {
  /** Environment for the smoke run (NATS_URL is added). */
  readonly env: Readonly<Record<string, string>>;
  /**
   * Arguments after the entrypoint, replacing the image's default command, given the free
   * port its health check is asked on and another free port.
   */
  readonly args?: (healthPort: number, otherPort: number) => string[];
  /** A health URL path on `port`, or "exit" for a job that must exit 0. */
  readonly check: { readonly path: string } | "exit";
}

const OPS = 9400;
const service = (
  name: string,
  ports: readonly number[],
  env: Record<string, string> = {},
): ImageSpec => ({
  name,
  build: name,
  entrypoint: ["node", "--enable-source-maps", `/app/main.mjs`],
  env: ["SHOAL_METRICS_PORT=9400", "SHOAL_METRICS_HOST=0.0.0.0", "SHOAL_HOME=/var/cache/shoal"],
  ports: [...ports, OPS],
  node: true,
  smoke: { env, check: { path: "/readyz" } },
});

export const IMAGES: readonly ImageSpec[] = [
  service("ingress", [8080], { SHOAL_HOST: "0.0.0.0", SHOAL_AUTH: "none" }),
  {
    ...service("worker", [], {
      SHOAL_NODE_ID: "smoke",
      SHOAL_WORKER_MEMORY_BYTES: String(1024 ** 3),
      SHOAL_SIDECAR_SOCKET: "/tmp/sidecar.sock",
    }),
    binaries: () => ({ "shoal-sidecar": sidecarBinary() }),
    env: [
      "SHOAL_METRICS_PORT=9400",
      "SHOAL_METRICS_HOST=0.0.0.0",
      "SHOAL_HOME=/var/cache/shoal",
      "SHOAL_SIDECAR_BIN=/usr/local/bin/shoal-sidecar",
    ],
  },
  service("model-loader", [8090], { SHOAL_NODE_ID: "smoke", SHOAL_HOST: "0.0.0.0" }),
  service("lora-registry", [8091], { SHOAL_REGISTRY_HOST: "0.0.0.0", SHOAL_AUTH: "none" }),
  service("blob-offloader", []),
  service("local-queue", [], { SHOAL_LOCAL_QUEUE_SOCKET: "/tmp/local-queue.sock" }),
  // Its page listens on the container's loopback (docs/console.md); the smoke test checks /readyz.
  service("console", [8093]),
  {
    name: "nats-bootstrap",
    build: "nats-bootstrap",
    entrypoint: ["node", "--enable-source-maps", "/app/main.mjs"],
    cmd: ["bootstrap"],
    env: [],
    ports: [],
    node: true,
    smoke: { env: {}, args: () => ["bootstrap"], check: "exit" },
  },
  {
    name: "nats",
    binaries: () => ({ "nats-server": natsServerBinary() }),
    entrypoint: ["nats-server"],
    cmd: ["-js", "-sd", "/data"],
    env: [],
    ports: [4222, 6222, 8222],
    node: false,
    smoke: {
      env: {},
      args: (health, client) => [
        "-js",
        "-sd",
        "/tmp/js",
        "-m",
        String(health),
        "-p",
        String(client),
      ],
      check: { path: "/healthz" },
    },
  },
];
