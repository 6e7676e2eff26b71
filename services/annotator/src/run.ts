import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Tracer } from "@opentelemetry/api";
import { Annotator, Backlog, serveAnnotations, type AnnotatorOptions } from "@shoal/annotation";
import type { Catalog } from "@shoal/config";
import {
  ensureWorkStream,
  type WorkStreamOptions,
  connectNats,
  drainOrClose,
} from "@shoal/jetstream";
import type { Logger } from "@shoal/telemetry";

export interface AnnotatorServiceOptions {
  readonly natsServers: string | readonly string[];
  readonly catalog: Catalog;
  readonly stream?: WorkStreamOptions;
  readonly partMaxPaddedTokens?: AnnotatorOptions["partMaxPaddedTokens"];
  readonly partMaxInputs?: AnnotatorOptions["partMaxInputs"];
  /** Items queued for one model past which its new work is refused with 429. @default 50000 */
  readonly maxQueuedPerModel?: number;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

export interface RunningAnnotator {
  stop(): Promise<void>;
}

/**
 * The annotator as its own deployable: answers ingress's annotate requests in a queue group,
 * so adding replicas adds annotation capacity with no coordination.
 */
export async function run(options: AnnotatorServiceOptions): Promise<RunningAnnotator> {
  const nc = await connectNats(options.natsServers, "shoal-annotator");
  const jsm = await jetstreamManager(nc);
  const stream = await ensureWorkStream(jsm, options.stream);
  const backlog = new Backlog({
    jsm,
    stream,
    catalog: options.catalog,
    maxQueuedPerModel: options.maxQueuedPerModel,
    logger: options.logger,
  });
  await backlog.start();
  const annotator = new Annotator({
    backlog,
    catalog: options.catalog,
    js: jetstream(nc),
    logger: options.logger,
    tracer: options.tracer,
    partMaxPaddedTokens: options.partMaxPaddedTokens,
    partMaxInputs: options.partMaxInputs,
  });
  const tokenizers = await annotator.preloadTokenizers();
  options.logger.info({ tokenizers }, "tokenizers loaded");
  serveAnnotations(nc, annotator, options.logger);
  await nc.flush();
  options.logger.info("annotator serving");
  return {
    async stop() {
      backlog.stop();
      await drainOrClose(nc);
    },
  };
}
