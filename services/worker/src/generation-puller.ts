import { randomUUID } from "node:crypto";
import { create, fromBinary } from "@bufbuild/protobuf";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SpanStatusCode, trace, type Context, type Tracer } from "@opentelemetry/api";
import type { ModelEntry, SamplingDefaults } from "@shoal/config";
import { Headers, pull, type WorkMessage } from "@shoal/jetstream";
import {
  ErrorCode,
  FinishReason,
  StreamDoneSchema,
  WorkBundleSchema,
  type GenerateTask,
  type WorkItem,
} from "@shoal/proto";
import {
  SidecarError,
  SidecarTimeoutError,
  SidecarUnavailableError,
  type FinishReason as SidecarFinish,
  type Generation,
  type SidecarClient,
} from "@shoal/sidecar-client";
import {
  extractContext,
  traceFieldsCarrier,
  traceparentOf,
  wallClockUs,
  type Logger,
} from "@shoal/telemetry";
import { AdapterGoneError, type AdapterCache } from "./adapter-cache.js";
import { deadLetter } from "./dead-letter.js";
import type { GeneratorMetrics } from "./metrics.js";
import { pullUntilStopped } from "./pull-loop.js";
import { attemptOf, retryLater } from "./retry.js";
import { StreamOut } from "./generation-stream-out.js";
import { traceWaitedLoad, type ModelLoadRecord } from "./load-trace.js";

export interface GenerationPullerOptions {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly stream: string;
  readonly consumer: string;
  readonly model: ModelEntry;
  /**
   * What the checkpoint's generation_config.json sets, for the sampling fields that neither
   * the request nor the catalog (whose defaults ingress already applied) set. @default none
   */
  readonly checkpointSampling?: SamplingDefaults;
  readonly sidecar: () => Promise<SidecarClient>;
  /**
   * Sequences decoding at once on this worker. The sidecar batches every sequence in flight
   * into each decode step, so more sequences raise throughput until a step gets slow; an item
   * is pulled when fewer than this many sequences run.
   */
  readonly maxSequences: number;
  readonly maxDeliver: number;
  readonly progressIntervalMs: number;
  /** Longest silence from the sidecar within one sequence before it counts as stalled. */
  readonly sequenceIdleTimeoutMs: number;
  /** How long a client may read nothing before its generation is cancelled. */
  readonly stallTimeoutMs: number;
  readonly onStall: (reason: string) => void;
  /**
   * The LoRA adapters of the worker's sidecar; without it, work naming an adapter is
   * answered UNAVAILABLE (this worker cannot reach the adapter registry).
   */
  readonly adapters?: AdapterCache;
  /** This generator's metrics; none recorded without. */
  readonly metrics?: GeneratorMetrics | undefined;
  /** The load that made the model resident, for the traces of the requests that waited for it. */
  readonly load?: ModelLoadRecord | undefined;
  readonly workerId: string;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

const LONG_POLL_MS = 1_000;

/** The tunable part of {@link GenerationPullerOptions}, as the worker's options carry it. */
export interface GenerationOptions {
  /** Sequences decoding at once per generator model. @default 8 */
  readonly maxSequences?: number;
  /** Longest silence from the sidecar within one sequence, ms. @default 120000 */
  readonly sequenceIdleTimeoutMs?: number;
  /** How long a client may read nothing before its generation is cancelled, ms. @default 30000 */
  readonly stallTimeoutMs?: number;
}

export function generationDefaults(
  options: GenerationOptions | undefined,
): Required<GenerationOptions> {
  return {
    maxSequences: options?.maxSequences ?? 8,
    sequenceIdleTimeoutMs: options?.sequenceIdleTimeoutMs ?? 120_000,
    stallTimeoutMs: options?.stallTimeoutMs ?? 30_000,
  };
}

/**
 * Pulls one generator model's work and streams it. Unlike embedding batches, generation is
 * continuous: each item's sequences are handed to the sidecar as soon as there is room, where
 * they join the running decode steps, and their tokens flow to ingress as they come (see
 * {@link StreamOut} for flow control). An item is acked only after its last event is
 * published, and tells JetStream it is still in progress while it runs.
 */
export class GenerationPuller {
  readonly #o: GenerationPullerOptions;
  readonly #running = new Set<Promise<void>>();
  #sequences = 0;
  #stopping = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;

  constructor(options: GenerationPullerOptions) {
    this.#o = options;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops pulling; running generations finish before this resolves. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#loop;
  }

  #isStopping(): boolean {
    return this.#stopping;
  }

  async #run(): Promise<void> {
    await pullUntilStopped(
      () => this.#once(),
      () => this.#isStopping(),
      this.#o.nc,
      { logger: this.#o.logger, model: this.#o.model.id, what: "generation pull" },
    );
    await Promise.all(this.#running);
  }

  async #once(): Promise<void> {
    while (this.#sequences >= this.#o.maxSequences && !this.#isStopping()) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
    if (this.#isStopping()) return;
    const sidecar = await this.#o.sidecar();
    const [msg] = await pull(this.#o.nc, this.#o.stream, this.#o.consumer, {
      batch: 1,
      expiresMs: LONG_POLL_MS,
    });
    if (msg === undefined) return;
    if (this.#isStopping()) {
      msg.nak();
      return;
    }
    const item = decodeGenerate(msg);
    if (item === undefined) {
      this.#o.logger.error(
        { subject: msg.subject, seq: msg.streamSequence },
        "malformed generation item dead-lettered",
      );
      await deadLetter(this.#o.js, this.#o.model.key, msg, "malformed work item", this.#o.logger);
      this.#o.metrics?.deadLettered("malformed");
      return;
    }
    const n = Math.max(1, item.task.n);
    this.#sequences += n;
    const running: Promise<void> = this.#execute(sidecar, msg, item.item, item.task, n)
      .catch((err: unknown) => {
        this.#o.logger.error({ err, model: this.#o.model.id }, "generation bookkeeping failed");
      })
      .finally(() => {
        this.#sequences -= n;
        this.#running.delete(running);
        const wake = this.#wake;
        this.#wake = undefined;
        wake?.();
      });
    this.#running.add(running);
  }

  async #execute(
    sidecar: SidecarClient,
    msg: WorkMessage,
    item: WorkItem,
    task: GenerateTask,
    n: number,
  ): Promise<void> {
    const { nc, workerId, tracer, logger } = this.#o;
    const parent = extractContext(traceFieldsCarrier(item));
    const pulledAtUs = wallClockUs();
    const enqueuedMs = Number(item.enqueuedUnixUs) / 1000;
    tracer
      .startSpan(
        "queue.wait",
        {
          startTime: enqueuedMs,
          attributes: {
            "shoal.request_id": item.requestId,
            "shoal.model": item.model,
            "shoal.delivery": msg.deliveryCount,
          },
        },
        parent,
      )
      .end(pulledAtUs / 1000);
    traceWaitedLoad(tracer, this.#o.load, parent, enqueuedMs, this.#o.model.key);
    const span = tracer.startSpan(
      "worker.generate",
      {
        attributes: {
          "shoal.request_id": item.requestId,
          "shoal.model": item.model,
          "shoal.worker_id": workerId,
          "shoal.sequences": n,
          "shoal.delivery": msg.deliveryCount,
        },
      },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    if (Number(item.deadlineUnixMs) > 0 && Number(item.deadlineUnixMs) <= Date.now()) {
      const out = this.#streamOut(item, n, ctx, () => undefined);
      out.error(ErrorCode.DEADLINE_EXCEEDED, "deadline passed while queued");
      await this.#finish(msg, out, span);
      return;
    }
    // Generations are never put back, so every redelivery is a worker that died running this
    // one: after `maxDeliver` of those the item is taken for the cause.
    if (msg.deliveryCount > this.#o.maxDeliver) {
      const out = this.#streamOut(item, n, ctx, () => undefined);
      out.error(ErrorCode.INTERNAL, `gave up after ${this.#o.maxDeliver} deliveries`);
      await nc.flush();
      out.close();
      await deadLetter(
        this.#o.js,
        this.#o.model.key,
        msg,
        "too many deliveries",
        logger,
        msg.deliveryCount,
      );
      this.#o.metrics?.deadLettered("gave_up");
      this.#o.metrics?.finished("failed");
      span.end();
      return;
    }
    const generations: Generation[] = [];
    const out = this.#streamOut(item, n, ctx, (reason) => {
      logger.info({ request_id: item.requestId, reason }, "generation cancelled");
      for (const g of generations) void g.cancel().catch(() => false);
    });
    const progress = setInterval(() => {
      msg.working();
    }, this.#o.progressIntervalMs);
    try {
      const traceparent = traceparentOf(ctx);
      const adapter = await this.#adapter(sidecar, task, ctx);
      for (let index = 0; index < n; index++) {
        generations.push(
          sidecar.generate({
            ...sidecarRequest(
              this.#o.model.key,
              task,
              this.#o.checkpointSampling ?? {},
              index,
              traceparent,
              this.#o.sequenceIdleTimeoutMs,
            ),
            adapter,
          }),
        );
      }
      // A cancel that arrived while the sequences were being sent reaches them now.
      if (out.cancelled) for (const g of generations) void g.cancel().catch(() => false);
      await Promise.all(
        generations.map(async (generation, index) => {
          let first = true;
          for await (const tokens of generation) {
            out.tokens(index, tokens.text, tokens.tokenIds.length);
            if (first) {
              first = false;
              this.#o.metrics?.firstToken(
                Math.max(0, wallClockUs() - Number(item.enqueuedUnixUs)) / 1e6,
              );
            }
          }
          const done = await generation.done;
          out.done(
            index,
            create(StreamDoneSchema, {
              index,
              finishReason: finishReason(done.finishReason),
              promptTokens: done.promptTokens,
              completionTokens: done.completionTokens,
              timings: {
                queueUs: uint32(pulledAtUs - Number(item.enqueuedUnixUs)),
                computeUs: done.computeUs,
                batchItems: n,
                batchTokens: done.promptTokens + done.completionTokens,
              },
            }),
          );
        }),
      );
      await out.drained();
      await this.#finish(msg, out, span);
      this.#o.metrics?.finished("ok");
    } catch (err) {
      for (const g of generations) void g.cancel().catch(() => false);
      await this.#failed(msg, out, span, err);
    } finally {
      clearInterval(progress);
    }
  }

  /** The sidecar's name for the task's adapter, loaded; `undefined` for the base model. */
  async #adapter(
    sidecar: SidecarClient,
    task: GenerateTask,
    ctx: Context,
  ): Promise<string | undefined> {
    if (task.adapter === undefined) return undefined;
    if (this.#o.adapters === undefined) {
      throw new AdapterUnavailableError("this worker has no adapter registry configured");
    }
    return this.#o.adapters.ensure(sidecar, this.#o.model.key, task.adapter, ctx);
  }

  #streamOut(
    item: WorkItem,
    n: number,
    ctx: Context,
    onCancel: (reason: string) => void,
  ): StreamOut {
    return new StreamOut({
      nc: this.#o.nc,
      item,
      workerId: this.#o.workerId,
      attempt: randomUUID().replaceAll("-", ""),
      n,
      window:
        item.task.case === "generate" && item.task.value.window > 0 ? item.task.value.window : 16,
      stallTimeoutMs: this.#o.stallTimeoutMs,
      ctx,
      onCancel,
    });
  }

  /** The last event is out: flush so it reached the server, then ack. */
  async #finish(
    msg: WorkMessage,
    out: StreamOut,
    span: ReturnType<Tracer["startSpan"]>,
  ): Promise<void> {
    await this.#o.nc.flush();
    out.close();
    msg.ack();
    span.end();
  }

  /**
   * A generation the sidecar could not finish. Before any event went out the item can simply
   * run again elsewhere; after, the client has part of an answer that cannot be resumed, so
   * it hears the error and the item is done.
   */
  async #failed(
    msg: WorkMessage,
    out: StreamOut,
    span: ReturnType<Tracer["startSpan"]>,
    err: unknown,
  ): Promise<void> {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR });
    if (err instanceof SidecarTimeoutError) this.#o.onStall(err.message);
    if (err instanceof AdapterGoneError || err instanceof AdapterUnavailableError) {
      out.error(
        err instanceof AdapterGoneError ? ErrorCode.NOT_FOUND : ErrorCode.UNAVAILABLE,
        err.message,
      );
      await this.#finish(msg, out, span);
      this.#o.metrics?.finished("failed");
      return;
    }
    // The sidecar lost the adapter since it was loaded (it restarted): load it again.
    const lostAdapter = err instanceof SidecarError && err.code === "adapter_not_found";
    if (lostAdapter) this.#o.adapters?.forget(this.#o.model.key);
    if (err instanceof SidecarError && !lostAdapter) {
      const code =
        err.code === "input_too_long" || err.code === "bad_request"
          ? ErrorCode.INVALID_ARGUMENT
          : ErrorCode.INTERNAL;
      out.error(
        code,
        err.code === "input_too_long"
          ? "the prompt and max_tokens do not fit the model's context"
          : err.message,
      );
      await this.#finish(msg, out, span);
      this.#o.metrics?.finished("failed");
      return;
    }
    const retryable =
      err instanceof SidecarUnavailableError || err instanceof SidecarTimeoutError || lostAdapter;
    if (retryable && out.published === 0 && attemptOf(msg) < this.#o.maxDeliver) {
      this.#o.logger.warn(
        { err, request_id: msg.headers?.get(Headers.requestId) },
        "generation failed before its first event; retrying",
      );
      out.close();
      await retryLater(this.#o.js, msg, this.#o.logger);
      span.end();
      return;
    }
    this.#o.logger.error({ err, model: this.#o.model.id }, "generation failed");
    out.error(ErrorCode.UNAVAILABLE, "generation failed midway; retry the request");
    await this.#finish(msg, out, span);
    this.#o.metrics?.finished("failed");
  }
}

/** The one generation item a message carries (the gateway never bundles them). */
function decodeGenerate(msg: WorkMessage): { item: WorkItem; task: GenerateTask } | undefined {
  let items: WorkItem[];
  try {
    items = fromBinary(WorkBundleSchema, msg.data).items;
  } catch {
    return undefined;
  }
  const item = items[0];
  if (items.length !== 1 || item === undefined) return undefined;
  if (item.task.case !== "generate" || item.task.value.input.case === undefined) return undefined;
  return { item, task: item.task.value };
}

/** Sequence `index` of a task as the sidecar takes it; seeds differ per sequence. */
function sidecarRequest(
  model: string,
  task: GenerateTask,
  defaults: SamplingDefaults,
  index: number,
  traceparent: string | undefined,
  timeoutMs: number,
): Parameters<SidecarClient["generate"]>[0] {
  const s = task.sampling;
  const input =
    task.input.case === "chat"
      ? { messages: task.input.value.messages.map((m) => ({ role: m.role, content: m.content })) }
      : { prompt: task.input.value ?? "" };
  return {
    model,
    ...input,
    maxTokens: s?.maxTokens,
    temperature: s?.temperature ?? defaults.temperature,
    topP: s?.topP ?? defaults.topP,
    topK: s?.topK ?? defaults.topK,
    minP: s?.minP ?? defaults.minP,
    repetitionPenalty: s?.repetitionPenalty ?? defaults.repetitionPenalty,
    seed: s?.seed === undefined ? undefined : Number(s.seed) + index,
    stop: s === undefined || s.stop.length === 0 ? undefined : s.stop,
    traceparent,
    timeoutMs,
  };
}

function finishReason(reason: SidecarFinish): FinishReason {
  switch (reason) {
    case "length":
      return FinishReason.LENGTH;
    case "cancelled":
      return FinishReason.CANCELLED;
    case "stop":
      return FinishReason.STOP;
  }
}

function uint32(micros: number): number {
  return Math.min(0xffff_ffff, Math.max(0, Math.round(micros)));
}

/** Work names an adapter and this worker cannot load adapters. */
class AdapterUnavailableError extends Error {
  override readonly name = "AdapterUnavailableError";
}
