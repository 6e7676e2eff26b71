import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import {
  DEAD_PREFIX,
  ROUTED_PREFIX,
  WORK_PREFIX,
  modelWorkFilter,
  routedWorkFilter,
} from "./subjects.js";

export interface WorkStreamOptions {
  /** @default "SHOAL_WORK" */
  readonly name?: string;
  /** Bound on queued bytes; past it publishes are refused (backpressure). @default 1 GiB */
  readonly maxBytes?: number;
  /** Bound on queued items. @default 1_000_000 */
  readonly maxMessages?: number;
  /** Work older than this is dropped by the server; deadlines are far shorter. @default 10 min */
  readonly maxAgeMs?: number;
  /** Window in which a repeated `Nats-Msg-Id` is stored once. @default 2 min */
  readonly duplicateWindowMs?: number;
  /** @default the work subjects, `shoal.work.v1.>` */
  readonly subjects?: readonly string[];
  /** Copies across a NATS cluster; unset keeps an existing stream's. @default 1 */
  readonly replicas?: number;
}

export interface WorkConsumerOptions {
  /**
   * Time a pulled item may stay unacked before JetStream redelivers it. This is how work held
   * by a worker that died comes back, so it bounds recovery time; workers send in-progress
   * for long work. @default 30 s
   */
  readonly ackWaitMs?: number;
  /** Bound on unacked items across all workers of the model. @default 10_000 */
  readonly maxAckPending?: number;
}

export const WORK_STREAM = "SHOAL_WORK";
/** Default ack wait of work consumers; see {@link WorkConsumerOptions.ackWaitMs}. */
export const DEFAULT_ACK_WAIT_MS = 30_000;

/** Creates or updates the work-queue stream every model's work goes through. */
export async function ensureWorkStream(
  jsm: JetStreamManager,
  options: WorkStreamOptions = {},
): Promise<string> {
  const name = options.name ?? WORK_STREAM;
  const config = {
    name,
    subjects: [...(options.subjects ?? [`${WORK_PREFIX}.>`])],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    discard: DiscardPolicy.New,
    max_bytes: options.maxBytes ?? 1024 ** 3,
    max_msgs: options.maxMessages ?? 1_000_000,
    max_age: nanos(options.maxAgeMs ?? 10 * 60_000),
    duplicate_window: nanos(options.duplicateWindowMs ?? 2 * 60_000),
  };
  await ensureStream(jsm, config, options.replicas);
  return name;
}

/** The durable name of the consumer shared by every worker that serves `modelKey`. */
export function modelConsumerName(modelKey: string): string {
  return `work-${modelKey}`;
}

/**
 * Creates or updates the durable pull consumer for one model. All workers that hold the model
 * pull from it, so the queue, not a router, decides who gets the next item.
 */
export async function ensureModelConsumer(
  jsm: JetStreamManager,
  stream: string,
  modelKey: string,
  options: WorkConsumerOptions = {},
): Promise<string> {
  return ensureWorkConsumer(
    jsm,
    stream,
    modelConsumerName(modelKey),
    modelWorkFilter(modelKey),
    options,
  );
}

export const ROUTED_STREAM = "SHOAL_ROUTED";

/**
 * The stream of the bench's top-down router mode: the router moves each item from the work
 * stream to one worker's subject here. Same retention and limits as the work stream.
 */
export async function ensureRoutedStream(
  jsm: JetStreamManager,
  options: WorkStreamOptions = {},
): Promise<string> {
  return ensureWorkStream(jsm, {
    ...options,
    name: options.name ?? ROUTED_STREAM,
    subjects: [`${ROUTED_PREFIX}.>`],
  });
}

/** The consumer of one worker's routed items of one model; only that worker pulls from it. */
export async function ensureRoutedConsumer(
  jsm: JetStreamManager,
  stream: string,
  worker: string,
  modelKey: string,
  options: WorkConsumerOptions = {},
): Promise<string> {
  return ensureWorkConsumer(
    jsm,
    stream,
    `routed-${worker}-${modelKey}`,
    routedWorkFilter(worker, modelKey),
    options,
  );
}

/** The consumer a top-down router takes every model's work from, in the bench's router mode. */
export async function ensureRouterConsumer(
  jsm: JetStreamManager,
  stream: string,
  options: WorkConsumerOptions = {},
): Promise<string> {
  return ensureWorkConsumer(jsm, stream, "router", `${WORK_PREFIX}.>`, options);
}

async function ensureWorkConsumer(
  jsm: JetStreamManager,
  stream: string,
  name: string,
  filter: string,
  options: WorkConsumerOptions,
): Promise<string> {
  const config = {
    durable_name: name,
    filter_subject: filter,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS),
    // Unlimited on the server: an item the server stops redelivering is lost without a word to
    // its client. Workers count deliveries and answer an item they give up on with its error.
    max_deliver: -1,
    max_ack_pending: options.maxAckPending ?? 10_000,
  };
  try {
    const current = await jsm.consumers.info(stream, name);
    if (differs(current.config, config)) await jsm.consumers.update(stream, name, config);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.consumers.add(stream, config);
  }
  return name;
}

/**
 * Creates the stream, or updates it where it differs from `config` (every Shoal process may
 * start first). One that already matches is left alone, so a service whose NATS user may only
 * read stream info starts against a stream the bootstrap made (docs/security.md). Replicas are
 * the operator's (the bootstrap sets them from SHOAL_STREAM_REPLICAS): a service that does not
 * name them creates the stream with one and leaves an existing stream's count alone.
 */
async function ensureStream(
  jsm: JetStreamManager,
  config: Parameters<JetStreamManager["streams"]["add"]>[0] & { name: string },
  replicas: number | undefined,
): Promise<void> {
  try {
    const current = await jsm.streams.info(config.name);
    const wanted = { ...config, num_replicas: replicas ?? current.config.num_replicas };
    if (differs(current.config, wanted)) await jsm.streams.update(config.name, wanted);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.streams.add({ ...config, num_replicas: replicas ?? 1 }).catch((cause: unknown) => {
      // A service under its own NATS user may not make streams: it was started before the
      // bootstrap (a first Helm install), and says so instead of exiting with a timeout.
      throw new Error(
        `stream ${config.name} does not exist and could not be made (${String(cause)}); ` +
          "where services run as their own NATS users the NATS bootstrap makes it: run it first",
        { cause },
      );
    });
  }
}

/** Whether any setting `wanted` names has another value in `current` (the server fills the rest). */
function differs(current: object, wanted: object): boolean {
  const have = current as Record<string, unknown>;
  return Object.entries(wanted).some(
    ([key, value]) => JSON.stringify(have[key]) !== JSON.stringify(value),
  );
}

function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.status === 404;
}

export const DEAD_LETTER_STREAM = "SHOAL_DEAD";

export interface DeadLetterStreamOptions {
  /** @default "SHOAL_DEAD" */
  readonly name?: string;
  /** Kept this long for an operator to inspect or replay. @default 7 days */
  readonly maxAgeMs?: number;
  /** Oldest entries go first past this size. @default 256 MiB */
  readonly maxBytes?: number;
  /** Copies across a NATS cluster; unset keeps an existing stream's. @default 1 */
  readonly replicas?: number;
}

/**
 * Creates or updates the stream where workers put items they gave up on, with the reason, so
 * poison work is kept for inspection instead of vanishing. Limits retention: entries age out.
 */
export async function ensureDeadLetterStream(
  jsm: JetStreamManager,
  options: DeadLetterStreamOptions = {},
): Promise<string> {
  const name = options.name ?? DEAD_LETTER_STREAM;
  const config = {
    name,
    subjects: [`${DEAD_PREFIX}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nanos(options.maxAgeMs ?? 7 * 24 * 3_600_000),
    max_bytes: options.maxBytes ?? 256 * 1024 ** 2,
  };
  await ensureStream(jsm, config, options.replicas);
  return name;
}
