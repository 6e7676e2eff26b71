/** What `npm run build` builds: one entry per deployable process. */
export interface ServiceBuild {
  /** The directory under dist/ and the image's name (`shoal-<name>`). */
  readonly name: string;
  /** Its main module, relative to the repository root. */
  readonly entry: string;
  /** Directories it serves as they are, copied beside the bundle: repository path → name there. */
  readonly assets?: Readonly<Record<string, string>>;
}

export const SERVICES: readonly ServiceBuild[] = [
  { name: "ingress", entry: "services/ingress/src/main.ts" },
  { name: "worker", entry: "services/worker/src/main.ts" },
  { name: "model-loader", entry: "services/model-loader/src/main.ts" },
  { name: "lora-registry", entry: "services/lora-registry/src/main.ts" },
  { name: "blob-offloader", entry: "services/blob-offloader/src/main.ts" },
  { name: "router", entry: "services/router/src/main.ts" },
  { name: "local-queue", entry: "services/local-queue/src/main.ts" },
  {
    name: "console",
    entry: "services/console/src/main.ts",
    assets: { "services/console/web": "web" },
  },
  // Makes every stream and bucket before the services start (a Job in the Helm chart).
  { name: "nats-bootstrap", entry: "tools/cluster/nats-auth.ts" },
];

/** Files every service may read at start, copied to `dist/<service>/share/` at the same paths. */
export const SHARED_FILES = ["deploy/catalog", "bundles"] as const;
