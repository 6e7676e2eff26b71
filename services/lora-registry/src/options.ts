import type { NatsAuth, ReadinessSink } from "@shoal/jetstream";
import type { Tracer } from "@opentelemetry/api";
import type { Catalog } from "@shoal/config";
import { ConfigError, intInRange } from "@shoal/config";
import type { EnsureModelOptions } from "@shoal/model-sources";
import type { Logger } from "@shoal/telemetry";
import type { AccessMode } from "@shoal/tenants";
import type { Registry } from "prom-client";

export interface LoraRegistryOptions {
  readonly natsServers: string | readonly string[];
  /** TLS and the NATS user this service connects as (`natsAuthFromEnv`); none: anonymous. */
  readonly natsAuth?: NatsAuth;
  /** Base models adapters can be published for: its `generator` entries. */
  readonly catalog: Catalog;
  /** @default 8091 (the model-loader's API has 8090); 0 picks a free port */
  readonly port?: number;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /**
   * `keys`: every request needs an API key of a tenant in the `SHOAL_TENANTS` KV bucket (the
   * keys ingress takes), and adapters belong to that tenant. `open`: single-tenant, every
   * request acts as `default` (the start log says so). @default "open"
   */
  readonly access?: AccessMode;
  /**
   * Largest upload, bytes, and also the most an archive may hold once decompressed. A larger
   * `Content-Length` is refused before the body is read; a body without one is cut off here.
   * Uploads are held in memory while validated, so this times {@link maxConcurrentUploads}
   * bounds the registry's memory. @default 256 MiB
   */
  readonly maxUploadBytes?: number;
  /** An upload that sends nothing for this long is dropped (408), ms. @default 30000 */
  readonly idleTimeoutMs?: number;
  /** Largest LoRA rank accepted. @default 64 */
  readonly maxRank?: number;
  /** Uploads read and validated at once; more are answered 503 with Retry-After. @default 4 */
  readonly maxConcurrentUploads?: number;
  /** Bound on all stored adapter files, applied when the bucket is created. @default 10 GiB */
  readonly storeMaxBytes?: number;
  /** How often leftovers of interrupted uploads are swept, ms. @default 3600000 */
  readonly sweepIntervalMs?: number;
  /** Time uploads in progress get to finish on shutdown, ms. @default 10000 */
  readonly shutdownGraceMs?: number;
  /** How base models are fetched to read their shape (hub token, pip mirror…). */
  readonly modelSources?: EnsureModelOptions;
  /** Where the registry registers its metrics (`booted.metrics`); none are kept without. */
  readonly metrics?: Registry | undefined;
  readonly logger: Logger;
  /** Told whether NATS is connected; a service waits for NATS while it is not. */
  readonly readiness?: ReadinessSink | undefined;
  /** API requests are traced with it. @default the global tracer (no-op unless installed) */
  readonly tracer?: Tracer;
}

/** {@link LoraRegistryOptions} validated, with every default filled in. */
export interface CompiledRegistryOptions {
  readonly port: number;
  readonly host: string;
  readonly access: AccessMode;
  readonly maxUploadBytes: number;
  readonly idleTimeoutMs: number;
  readonly maxRank: number;
  readonly maxConcurrentUploads: number;
  readonly storeMaxBytes: number;
  readonly sweepIntervalMs: number;
  readonly shutdownGraceMs: number;
}

export const DEFAULT_REGISTRY_OPTIONS = Object.freeze({
  port: 8091,
  host: "127.0.0.1",
  maxUploadBytes: 256 * 1024 * 1024,
  idleTimeoutMs: 30_000,
  maxRank: 64,
  maxConcurrentUploads: 4,
  storeMaxBytes: 10 * 1024 ** 3,
  sweepIntervalMs: 60 * 60_000,
  shutdownGraceMs: 10_000,
});

/**
 * Validates the options once and fills defaults.
 *
 * @throws ConfigError naming the option that is wrong.
 */
export function compileRegistryOptions(options: LoraRegistryOptions): CompiledRegistryOptions {
  const d = DEFAULT_REGISTRY_OPTIONS;
  if (!options.catalog.models.some((m) => m.family === "generator")) {
    throw new ConfigError("lora registry: the catalog lists no generator model to adapt");
  }
  const host = options.host ?? d.host;
  if (host === "") throw new ConfigError("lora registry: host must not be empty");
  return {
    port: intInRange("port", options.port ?? d.port, 0, 65_535),
    host,
    access: options.access ?? "open",
    maxUploadBytes: intInRange(
      "maxUploadBytes",
      options.maxUploadBytes ?? d.maxUploadBytes,
      1024,
      2 ** 40,
    ),
    idleTimeoutMs: intInRange(
      "idleTimeoutMs",
      options.idleTimeoutMs ?? d.idleTimeoutMs,
      1,
      3_600_000,
    ),
    maxRank: intInRange("maxRank", options.maxRank ?? d.maxRank, 1, 4096),
    maxConcurrentUploads: intInRange(
      "maxConcurrentUploads",
      options.maxConcurrentUploads ?? d.maxConcurrentUploads,
      1,
      1024,
    ),
    storeMaxBytes: intInRange(
      "storeMaxBytes",
      options.storeMaxBytes ?? d.storeMaxBytes,
      1024,
      2 ** 50,
    ),
    sweepIntervalMs: intInRange(
      "sweepIntervalMs",
      options.sweepIntervalMs ?? d.sweepIntervalMs,
      1000,
      2 ** 31 - 1,
    ),
    shutdownGraceMs: intInRange(
      "shutdownGraceMs",
      options.shutdownGraceMs ?? d.shutdownGraceMs,
      0,
      600_000,
    ),
  };
}
