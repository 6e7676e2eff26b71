/** What `npm run build` builds: one entry per deployable process. */
export interface ServiceBuild {
  /** The directory under dist/ and the image's name (`shoal-<name>`). */
  readonly name: string;
  /** Its main module, relative to the repository root. */
  readonly entry: string;
  /** Packages left out of the bundle and shipped beside it (native code, files read at run time). */
  readonly externals: string[];
}

export const SERVICES: readonly ServiceBuild[] = [
  { name: "ingress", entry: "services/ingress/src/main.ts", externals: [] },
  { name: "worker", entry: "services/worker/src/main.ts", externals: [] },
  { name: "model-loader", entry: "services/model-loader/src/main.ts", externals: [] },
  { name: "lora-registry", entry: "services/lora-registry/src/main.ts", externals: [] },
  { name: "blob-offloader", entry: "services/blob-offloader/src/main.ts", externals: [] },
  { name: "router", entry: "services/router/src/main.ts", externals: [] },
  { name: "local-queue", entry: "services/local-queue/src/main.ts", externals: [] },
  // Makes every stream and bucket before the services start (a Job in the Helm chart).
  { name: "nats-bootstrap", entry: "tools/cluster/nats-auth.ts", externals: [] },
];

/** Files every service may read at start, copied to `dist/<service>/share/` at the same paths. */
export const SHARED_FILES = ["deploy/catalog", "bundles"] as const;
