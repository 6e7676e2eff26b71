import type { Registry } from "prom-client";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Tracer } from "@opentelemetry/api";
import { compileBatchBudget, type BatchBudgetOptions } from "@shoal/batching";
import { AdapterNotFoundError, AdapterStore } from "@shoal/adapters";
import { openBlobStore, type BlobStoreSettings } from "@shoal/blobs";
import { adaptersDir, type Catalog, type ModelEntry } from "@shoal/config";
import { DeviceTurns } from "./device-turns.js";
import { checkpointSampling } from "./checkpoint-sampling.js";
import {
  DEFAULT_ACK_WAIT_MS,
  connectNats,
  drainOrClose,
  ensureDeadLetterStream,
  ensureModelConsumer,
  ensureRoutedConsumer,
  ensureRoutedStream,
  ensureWorkStream,
  type WorkConsumerOptions,
  type WorkStreamOptions,
  type NatsAuth,
  type ReadinessSink,
} from "@shoal/jetstream";
import {
  compileEnsureModelOptions,
  ensureModel,
  type EnsureModelOptions,
} from "@shoal/model-sources";
import { SidecarClient } from "@shoal/sidecar-client";
import type { Logger } from "@shoal/telemetry";
import {
  GenerationPuller,
  generationDefaults,
  type GenerationOptions,
} from "./generation-puller.js";
import { LocalQueueClient } from "@shoal/local-queue";
import { AdapterCache } from "./adapter-cache.js";
import { WorkerMetrics } from "./metrics.js";
import { ResidencyMetrics } from "./residency-metrics.js";
import { registerSidecarMetrics } from "./sidecar-metrics.js";
import { LocalHandOff } from "./local-hand-off.js";
import { ModelPuller } from "./model-puller.js";
import { ResidentModels } from "./resident-models.js";
import { loadOptionsFor, loadPath } from "./load-options.js";
import type { ModelLoadRecord } from "./load-trace.js";
import { servingSettings } from "./serving-settings.js";
import { withComputeThreads } from "./compute-threads.js";
import { SidecarProcess } from "./sidecar-process.js";
import { SidecarSupervisor } from "./sidecar-supervisor.js";

export interface WorkerOptions {
  readonly natsServers: string | readonly string[];
  /** TLS and the NATS user this service connects as (`natsAuthFromEnv`); none: anonymous. */
  readonly natsAuth?: NatsAuth;
  readonly catalog: Catalog;
  /** Catalog ids this worker serves. @default every embedding model in the catalog */
  readonly models?: readonly string[];
  /** Path of the `shoal-sidecar` binary this worker runs. */
  readonly sidecarBinary: string;
  /** @default `<tmpdir>/shoal-sidecar-<workerId>.sock` */
  readonly sidecarSocket?: string;
  /** @default "cpu" */
  readonly device?: string;
  /** @default a random id */
  readonly workerId?: string;
  // The serving settings below apply to every model this worker serves and override the
  // model's own (catalog `serving`, where a config bundle's tuned values land); the defaults
  // apply where neither sets one (./serving-settings.ts).
  /** Hard ceiling on one batch; the learned latency model keeps batches below it. */
  readonly budget?: BatchBudgetOptions;
  /**
   * Time one batch should take when no request's deadline is tighter, ms: the worker learns
   * its own batch latency online and sizes batches to this. @default 250
   */
  readonly batchTargetMs?: number;
  /**
   * Batches handed to the sidecar at once per model: 2 forms and queues the next batch while
   * one computes ("one in flight plus one ready"); 1 runs them strictly in turn. On a 2-core
   * CPU sidecar 1 measured 5–9% more throughput (docs/benchmarks.md): the ready batch is formed
   * early, from less queued work, so batches come out smaller. @default 1
   */
  readonly maxBatchesInFlight?: number;
  /**
   * Batches the accelerator runs at once across all the models this worker holds: each model
   * then forms its next batch only when the device can take it (`DeviceTurns`). Unset, every
   * model sends its batches on its own, as on a CPU whose model threads have cores of their
   * own.
   */
  readonly deviceBatches?: number | undefined;
  /** Longest time spent topping a batch up while more work is queued, ms. @default 2 */
  readonly maxFillWaitMs?: number;
  /** Items asked for per top-up pull. @default 64 */
  readonly pullBatch?: number;
  readonly stream?: WorkStreamOptions;
  readonly consumer?: WorkConsumerOptions;
  /**
   * Deliveries after which an item that keeps failing (or keeps taking workers down) is
   * answered with its error and dropped. Put-backs count as deliveries too. @default 10
   */
  readonly maxDeliver?: number;
  /** Environment for the sidecar process (OTLP variables reach it this way). */
  readonly sidecarEnv: Readonly<Record<string, string | undefined>>;
  /**
   * Longest a batch may take before the sidecar counts as stalled and is replaced; its items
   * go back to the queue. @default 120000
   */
  readonly batchTimeoutMs?: number;
  /** How served models are fetched into the cache when missing (hub token, progress…). */
  readonly modelSources?: EnsureModelOptions;
  /**
   * Where LoRA adapters fetched from the registry are kept, one directory per version.
   * @default `~/.cache/shoal/adapters`
   */
  readonly adaptersDir?: string;
  /** LoRA adapters kept loaded per model on the sidecar. @default 16 */
  readonly maxAdaptersPerModel?: number;
  /**
   * Where the blob offloader keeps large inputs; the same store the offloader is given.
   * @default the JetStream Object Store
   */
  readonly blobStore?: BlobStoreSettings;
  /**
   * Set when a model-loader manages this worker's node (docs/model-loader.md): the worker then
   * loads nothing by itself, takes `load`/`unload` on its control subject, pulls only the
   * models resident in its sidecar, and sends heartbeats with the sidecar's memory figures.
   * Unset, it loads `models` at start and serves them until it stops.
   */
  readonly residency?: WorkerResidencyOptions;
  /**
   * Where this worker's work comes from: `shared`, the model's queue every worker serving it
   * pulls from (Shoal's scheduling), or `routed`, only the items a top-down router assigned to
   * this worker (its subjects in SHOAL_ROUTED), for the bench that compares the two. Batches
   * are formed the same way from either. @default "shared"
   */
  readonly workSource?: "shared" | "routed";
  /** Time to finish the batch in hand on shutdown. @default 10000 */
  readonly shutdownGraceMs?: number;
  /**
   * Socket of the machine-local queue shared by the workers of this host (services/local-queue).
   * Set, put-back work is handed over there and this worker takes its neighbours' put-backs
   * before pulling; unset, put-back is a NAK over the network. @default unset
   */
  readonly localQueueSocket?: string;
  /** How generator models are served (sequences at once, stall timeouts). */
  readonly generation?: GenerationOptions;
  readonly logger: Logger;
  /** Told whether NATS is connected; a service waits for NATS while it is not. */
  readonly readiness?: ReadinessSink | undefined;
  readonly tracer: Tracer;
  /** Where the worker registers its metrics (`booted.metrics`); none are kept without. */
  readonly metrics?: Registry;
}

/** Longest one model load may take unless the options say otherwise. */
const DEFAULT_LOAD_TIMEOUT_MS = 600_000;

export interface WorkerResidencyOptions {
  /** The node whose model-loader sends this worker its loads. */
  readonly node: string;
  /** Memory of this worker's accelerator, bytes: the budget the loader places models in. */
  readonly capacityBytes: number;
  /** @default 1000 */
  readonly heartbeatMs?: number;
  /** Longest one model load may take. @default 600000 */
  readonly loadTimeoutMs?: number;
}

export interface RunningWorker {
  readonly workerId: string;
  readonly nc: NatsConnection;
  /** Stops pulling, finishes or puts back the batch in hand, drains NATS, stops the sidecar. */
  stop(): Promise<void>;
}

/**
 * A scheduler-free worker: owns one sidecar (one accelerator), loads its models, and pulls
 * each model's work from the shared queue. Nothing routes work to it; it takes what it can
 * run now.
 */
export async function run(options: WorkerOptions): Promise<RunningWorker> {
  const workerId = options.workerId ?? randomUUID().slice(0, 8);
  const logger = options.logger.child({ worker_id: workerId });
  const managed = options.residency;
  const models = managed === undefined ? servedModels(options.catalog, options.models) : [];
  const socketPath = options.sidecarSocket ?? join(tmpdir(), `shoal-sidecar-${workerId}.sock`);
  // Each model's budget is compiled when its puller starts, which for a managed worker is when
  // the loader places a model; a bad ceiling of the worker's own is refused now, at start.
  compileBatchBudget(options.budget);
  const batchTimeoutMs = options.batchTimeoutMs ?? 120_000;
  const ackWaitMs = options.consumer?.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;
  const sources = compileEnsureModelOptions({ logger, ...options.modelSources });
  for (const model of models) await ensureModel(model, sources);
  let resident: ResidentModels | undefined;

  const supervisor = new SidecarSupervisor({
    start: async () => {
      const process = await SidecarProcess.start({
        binary: options.sidecarBinary,
        socketPath,
        device: options.device ?? "cpu",
        env: withComputeThreads(options.sidecarEnv, models),
        logger,
      });
      const client = await SidecarClient.connect({ socketPath, requestTimeoutMs: batchTimeoutMs });
      for (const model of resident?.resident() ?? models) {
        // A load is not a batch: it gets the load timeout, not the batch timeout.
        const options = await (resident?.loadOptions(client, model) ??
          loadOptionsFor(client, model, DEFAULT_LOAD_TIMEOUT_MS));
        await client.load(model.key, loadPath(model), options);
      }
      return { process, client };
    },
    logger,
  });
  await supervisor.start();
  if (options.metrics !== undefined) {
    registerSidecarMetrics(options.metrics, () => supervisor.client(), logger);
  }

  const nc = await connectNats(
    options.natsServers,
    `shoal-worker-${workerId}`,
    options.natsAuth,
    options.readiness,
  );
  const jsm = await jetstreamManager(nc);
  const stream = await ensureWorkStream(jsm, options.stream);
  await ensureDeadLetterStream(jsm);
  const js = jetstream(nc);
  const adapterStore = await AdapterStore.open(nc, { logger });
  const residencyMetrics =
    options.metrics === undefined ? undefined : new ResidencyMetrics(options.metrics);
  const adapters = new AdapterCache({
    source: {
      fetch: (baseKey, name, version, dir) => adapterStore.fetch(baseKey, name, version, dir),
      isNotFound: (err) => err instanceof AdapterNotFoundError,
    },
    dir: options.adaptersDir ?? adaptersDir({}),
    maxLoadedPerModel: options.maxAdaptersPerModel,
    metrics: residencyMetrics,
    logger,
    tracer: options.tracer,
  });
  const localQueue =
    options.localQueueSocket === undefined
      ? undefined
      : new LocalQueueClient({ socketPath: options.localQueueSocket });
  const maxDeliver = options.maxDeliver ?? 10;
  const routedStream =
    options.workSource === "routed" ? await ensureRoutedStream(jsm, options.stream) : undefined;
  const blobStore = options.blobStore ?? { backend: "nats" };
  const openBlobs = () => openBlobStore(nc, blobStore, logger);
  const metrics = options.metrics === undefined ? undefined : new WorkerMetrics(options.metrics);
  const deviceTurns =
    options.deviceBatches === undefined ? undefined : new DeviceTurns(options.deviceBatches);
  const makePuller = async (
    model: ModelEntry,
    load?: ModelLoadRecord,
  ): Promise<ModelPuller | GenerationPuller> => {
    const consumer =
      routedStream === undefined
        ? await ensureModelConsumer(jsm, stream, model.key, options.consumer)
        : await ensureRoutedConsumer(jsm, routedStream, workerId, model.key, options.consumer);
    const source = routedStream ?? stream;
    // Generators stream continuously instead of running batches: their own puller.
    if (model.family === "generator") {
      return new GenerationPuller({
        ...generationDefaults(options.generation),
        nc,
        js,
        stream: source,
        consumer,
        model,
        checkpointSampling: await checkpointSampling(model.dir, logger),
        sidecar: () => supervisor.client(),
        maxDeliver,
        progressIntervalMs: Math.max(100, Math.floor(ackWaitMs / 3)),
        onStall: (reason) => void supervisor.restart(reason),
        adapters,
        load,
        metrics: metrics?.forGenerator(model.key),
        workerId,
        logger: logger.child({ model: model.id }),
        tracer: options.tracer,
      });
    }
    return new ModelPuller({
      nc,
      js,
      stream: source,
      consumer,
      model,
      sidecar: () => supervisor.client(),
      ...servingSettings(options, model),
      maxDeliver,
      progressIntervalMs: Math.max(100, Math.floor(ackWaitMs / 3)),
      batchTimeoutMs,
      deviceTurns,
      openBlobs,
      localQueue:
        localQueue === undefined
          ? undefined
          : new LocalHandOff({
              nc,
              client: localQueue,
              modelKey: model.key,
              logger: logger.child({ model: model.id }),
            }),
      onStall: (reason) => void supervisor.restart(reason),
      load,
      metrics: metrics?.forModel(model.key),
      workerId,
      logger: logger.child({ model: model.id }),
      tracer: options.tracer,
    });
  };
  const pullers: (ModelPuller | GenerationPuller)[] = [];
  for (const model of models) pullers.push(await makePuller(model));
  for (const p of pullers) p.start();
  if (managed !== undefined) {
    resident = new ResidentModels({
      nc,
      catalog: options.catalog,
      workerId,
      node: managed.node,
      capacityBytes: managed.capacityBytes,
      heartbeatMs: managed.heartbeatMs ?? 1000,
      sidecar: () => supervisor.client(),
      runner: makePuller,
      sources,
      loadTimeoutMs: managed.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS,
      metrics: residencyMetrics,
      logger,
      tracer: options.tracer,
    });
    resident.start();
  }
  logger.info(
    {
      models: models.map((m) => m.id),
      socket: socketPath,
      node: managed?.node,
      bundle: options.catalog.bundle?.path ?? "none",
    },
    "worker pulling",
  );

  return {
    workerId,
    nc,
    async stop() {
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise((resolve) => {
        timer = setTimeout(resolve, options.shutdownGraceMs ?? 10_000);
      });
      await Promise.race([
        Promise.all([...pullers.map((p) => p.stop()), resident?.stop()]),
        graceOver,
      ]);
      clearTimeout(timer);
      await localQueue?.close();
      await drainOrClose(nc);
      await supervisor.stop();
      logger.info("worker stopped");
    },
  };
}

function servedModels(catalog: Catalog, ids: readonly string[] | undefined): ModelEntry[] {
  if (ids === undefined || ids.length === 0) {
    return catalog.models.filter((m) => m.family === "embedding");
  }
  return ids.map((id) => {
    const model = catalog.find(id);
    if (model === undefined) throw new Error(`worker: model "${id}" is not in the catalog`);
    return model;
  });
}
