import { setTimeout as sleep } from "node:timers/promises";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { context, SpanStatusCode, trace, type Span, type Tracer } from "@opentelemetry/api";
import {
  compileLatencyTargetOptions,
  createLatencyModel,
  formBatch,
  latencyTargetMicros,
  maxPaddedTokensWithin,
  type BatchBudget,
  type LatencyTarget,
} from "@shoal/batching";
import type { ModelEntry } from "@shoal/config";
import { pull, type WorkMessage } from "@shoal/jetstream";
import { create } from "@bufbuild/protobuf";
import { EmbedResultSchema, ErrorCode, TimingsSchema } from "@shoal/proto";
import { SidecarError, SidecarTimeoutError, type SidecarClient } from "@shoal/sidecar-client";
import { traceparentOf, wallClockUs, type Logger } from "@shoal/telemetry";
import { publishAnswer } from "./answers.js";
import { deadLetter } from "./dead-letter.js";
import { decodePulled, type PulledItem } from "./pulled-item.js";

export interface ModelPullerOptions {
  readonly nc: NatsConnection;
  /** Publishes to the dead-letter stream. */
  readonly js: JetStreamClient;
  readonly stream: string;
  readonly consumer: string;
  readonly model: ModelEntry;
  /**
   * The sidecar client in use, once it is ready. The worker replaces it when it restarts the
   * sidecar; pulling waits meanwhile, so no item burns a delivery on a sidecar that is down.
   */
  readonly sidecar: () => Promise<SidecarClient>;
  /** Hard ceiling on a batch (memory); the latency model sizes batches below it. */
  readonly budget: BatchBudget;
  /** Latency a batch should stay within when no deadline is tighter, ms. */
  readonly batchTargetMs: number;
  /** Longest time spent topping a batch up while the server reports more work queued. */
  readonly maxFillWaitMs: number;
  /** Items asked for per pull. */
  readonly pullBatch: number;
  /** Deliveries after which a failing item is answered with its error and dropped. */
  readonly maxDeliver: number;
  /**
   * How often items of a running batch tell JetStream they are still being worked on, so a
   * batch longer than the ack wait is not redelivered to another worker meanwhile.
   */
  readonly progressIntervalMs: number;
  /** Batches handed to the sidecar at once: 1 runs them strictly in turn, 2 prefetches one. */
  readonly maxBatchesInFlight: number;
  /** Longest a batch may run before the sidecar is deemed stalled. */
  readonly batchTimeoutMs: number;
  /** Called when a batch timed out: the sidecar is replaced. */
  readonly onStall: (reason: string) => void;
  readonly workerId: string;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

/** Timings travel as uint32 µs (71 minutes); a longer or negative (clock skew) span saturates. */
function uint32(micros: number): number {
  return Math.min(0xffff_ffff, Math.max(0, Math.round(micros)));
}

/** Enqueue → pull; zero when the item carries no enqueue time (it was not annotated by Shoal). */
function queueWaitUs(p: PulledItem): number {
  const enqueued = Number(p.item.enqueuedUnixUs);
  return enqueued > 0 ? uint32(p.pulledAtUs - enqueued) : 0;
}

/**
 * How long an idle pull waits on the server before asking again. A pull request cannot be
 * withdrawn, so this also bounds how long shutdown waits for an idle loop to notice.
 */
const LONG_POLL_MS = 1_000;

/**
 * Pulls one model's work and runs it batch by batch. It asks for work only when it can start
 * a batch, tops the batch up with what is already queued (never waiting longer than the fill
 * wait), puts back what does not fit, and acks each item only after its answer is published.
 * With `maxBatchesInFlight` 2 the next batch is formed and handed to the sidecar while the
 * current one computes, so the accelerator never waits on a pull or a publish.
 */
export class ModelPuller {
  readonly #o: ModelPullerOptions;
  readonly #latency = createLatencyModel();
  readonly #target: LatencyTarget;
  readonly #inFlight = new Set<Promise<void>>();
  #stopping = false;
  #loop: Promise<void> | undefined;

  constructor(options: ModelPullerOptions) {
    this.#o = options;
    this.#target = compileLatencyTargetOptions({ maxTargetMicros: options.batchTargetMs * 1000 });
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops pulling; the batches in hand finish (or are put back) before this resolves. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#loop;
  }

  /**
   * The batch budget for this round: the largest padded-token count the latency model, learned
   * from this worker's own batches, predicts to finish within the target (the configured batch
   * latency, or less when an item's deadline is closer), never above the hard ceiling. When
   * nothing fits, a one-token budget still runs the most urgent item alone.
   */
  #budgetFor(pulled: readonly PulledItem[], nowUnixMs: number): BatchBudget {
    const ceiling = this.#o.budget;
    const sized = maxPaddedTokensWithin(
      this.#latency,
      {
        targetMicros: latencyTargetMicros(pulled, nowUnixMs, this.#target),
        sequences: Math.min(
          ceiling.maxInputs,
          pulled.reduce((n, p) => n + p.inputs, 0),
        ),
      },
      ceiling,
    );
    return { ...ceiling, maxPaddedTokens: sized.fits ? sized.maxPaddedTokens : 1 };
  }

  /** Read through a method: the flag changes while a pull is awaited. */
  #isStopping(): boolean {
    return this.#stopping;
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      try {
        await this.#once();
      } catch (err) {
        if (this.#isStopping() || this.#o.nc.isClosed()) break;
        this.#o.logger.warn({ err, model: this.#o.model.id }, "pull cycle failed; retrying");
        await sleep(250);
      }
    }
    await Promise.all(this.#inFlight);
  }

  /** Runs a batch without waiting for it; `#once` waits when the in-flight limit is reached. */
  #dispatch(sidecar: SidecarClient, batch: readonly PulledItem[]): void {
    const running: Promise<void> = this.#execute(sidecar, batch)
      .catch((err: unknown) => {
        this.#o.logger.error({ err, model: this.#o.model.id }, "batch bookkeeping failed");
      })
      .finally(() => this.#inFlight.delete(running));
    this.#inFlight.add(running);
  }

  async #once(): Promise<void> {
    while (this.#inFlight.size >= this.#o.maxBatchesInFlight) await Promise.race(this.#inFlight);
    const { nc, stream, consumer } = this.#o;
    const sidecar = await this.#o.sidecar();
    const first = await pull(nc, stream, consumer, { batch: 1, expiresMs: LONG_POLL_MS });
    if (first.length === 0) return;
    const pulled = await this.#decode(first);
    const fillUntil = performance.now() + this.#o.maxFillWaitMs;
    // The server says how much is still queued with every message: when nothing is, the batch
    // starts now rather than after the fill wait.
    let queued = first.at(-1)?.pending ?? 0;
    while (!this.#isStopping() && queued > 0) {
      // Every item carries at least one input, so asking for no more items than there are
      // free input slots keeps over-pulling (and the put-backs it costs) small.
      const room = this.#o.budget.maxInputs - pulled.reduce((n, p) => n + p.inputs, 0);
      if (room <= 0) break;
      const more = await pull(nc, stream, consumer, { batch: Math.min(this.#o.pullBatch, room) });
      pulled.push(...(await this.#decode(more)));
      queued = more.at(-1)?.pending ?? 0;
      if (performance.now() >= fillUntil) break;
    }
    const now = Date.now();
    const { batch, putBack, expired } = formBatch(pulled, this.#budgetFor(pulled, now), now);
    for (const p of putBack) p.msg.nak();
    await this.#answerExpired(expired);
    if (this.#isStopping()) {
      for (const p of batch) p.msg.nak();
      return;
    }
    if (batch.length > 0) this.#dispatch(sidecar, batch);
  }

  /**
   * Decodes pulled messages. A malformed one is dead-lettered. One delivered more than
   * `maxDeliver` times (it keeps failing, or keeps taking its worker down) is answered with an
   * error and dead-lettered, so a poison item never circulates and its client hears why.
   */
  async #decode(messages: readonly WorkMessage[]): Promise<PulledItem[]> {
    const items: PulledItem[] = [];
    const exhausted: PulledItem[] = [];
    for (const msg of messages) {
      const item = decodePulled(msg);
      if (item === undefined) {
        this.#o.logger.error(
          { subject: msg.subject, seq: msg.streamSequence },
          "malformed work item dead-lettered",
        );
        await deadLetter(this.#o.js, this.#o.model.key, msg, "malformed work item", this.#o.logger);
      } else if (msg.deliveryCount > this.#o.maxDeliver) {
        exhausted.push(item);
      } else {
        items.push(item);
      }
    }
    await this.#giveUp(exhausted, `gave up after ${this.#o.maxDeliver} deliveries`);
    return items;
  }

  /** Answers items with an error and moves them to the dead-letter stream. */
  async #giveUp(items: readonly PulledItem[], message: string): Promise<void> {
    if (items.length === 0) return;
    for (const p of items) {
      publishAnswer(this.#o.nc, this.#o.workerId, p.item, p.parent, {
        case: "error",
        code: ErrorCode.INTERNAL,
        message,
      });
    }
    await this.#o.nc.flush();
    for (const p of items) {
      await deadLetter(this.#o.js, this.#o.model.key, p.msg, message, this.#o.logger);
    }
  }

  async #answerExpired(expired: readonly PulledItem[]): Promise<void> {
    if (expired.length === 0) return;
    for (const p of expired) {
      publishAnswer(this.#o.nc, this.#o.workerId, p.item, p.parent, {
        case: "error",
        code: ErrorCode.DEADLINE_EXCEEDED,
        message: "deadline passed while queued",
      });
    }
    await this.#o.nc.flush();
    for (const p of expired) p.msg.ack();
  }

  async #execute(sidecar: SidecarClient, batch: readonly PulledItem[]): Promise<void> {
    const { nc, tracer, workerId, model } = this.#o;
    const startedUs = wallClockUs();
    const batchTokens = batch.reduce((n, p) => n + p.totalTokens, 0);
    const spans = batch.map((p) => ({
      p,
      ...this.#traceItem(tracer, p, batch.length, batchTokens),
    }));
    const inputs = batch.flatMap((p) => p.inputTexts);
    const progress = setInterval(() => {
      for (const p of batch) p.msg.working();
    }, this.#o.progressIntervalMs);
    try {
      const result = await sidecar.embed({
        model: model.key,
        inputs,
        truncate: true,
        timeoutMs: this.#o.batchTimeoutMs,
        traceparents: spans
          .map((s) => traceparentOf(trace.setSpan(s.parent, s.span)))
          .filter((t): t is string => t !== undefined),
      });
      this.#latency.observe({
        sequences: inputs.length,
        paddedTokens: inputs.length * Math.max(1, ...result.tokens),
        micros: result.computeUs,
      });
      const rowBytes = result.dim * 4;
      let row = 0;
      for (const span of spans) {
        const { p } = span;
        const n = p.inputs;
        const truncated = result.truncated.slice(row, row + n);
        const ctx = trace.setSpan(span.parent, span.span);
        if (!p.truncate && truncated.some(Boolean)) {
          publishAnswer(nc, workerId, p.item, ctx, {
            case: "error",
            code: ErrorCode.INVALID_ARGUMENT,
            message: `an input is longer than the model's ${model.maxInputTokens} tokens and truncate is false`,
          });
        } else {
          publishAnswer(
            nc,
            workerId,
            p.item,
            ctx,
            {
              case: "embed",
              value: create(EmbedResultSchema, {
                dim: result.dim,
                embeddings: result.embeddings.subarray(row * rowBytes, (row + n) * rowBytes),
                tokens: result.tokens.slice(row, row + n),
                truncated,
              }),
            },
            create(TimingsSchema, {
              queueUs: queueWaitUs(p),
              batchUs: uint32(startedUs - p.pulledAtUs),
              computeUs: result.computeUs,
              batchItems: inputs.length,
              batchTokens,
            }),
          );
        }
        row += n;
      }
      await nc.flush();
      for (const p of batch) p.msg.ack();
      for (const s of spans) {
        if (this.#o.logger.isLevelEnabled("debug")) {
          context.with(trace.setSpan(s.parent, s.span), () => {
            this.#o.logger.debug(
              { request_id: s.p.item.requestId, part: s.p.item.part, batch_items: inputs.length },
              "part answered",
            );
          });
        }
        s.span.end();
      }
    } catch (err) {
      if (err instanceof SidecarTimeoutError) this.#o.onStall(err.message);
      for (const s of spans) {
        s.span.recordException(err as Error);
        s.span.setStatus({ code: SpanStatusCode.ERROR });
        s.span.end();
      }
      await this.#failed(batch, err);
    } finally {
      clearInterval(progress);
    }
  }

  /**
   * A batch the sidecar could not run. Items go back for another try until they have used
   * their deliveries; then the client hears the cause and the item is dropped.
   */
  async #failed(batch: readonly PulledItem[], err: unknown): Promise<void> {
    this.#o.logger.error({ err, model: this.#o.model.id, items: batch.length }, "batch failed");
    const exhausted = batch.filter((p) => p.msg.deliveryCount >= this.#o.maxDeliver);
    for (const p of batch) if (!exhausted.includes(p)) p.msg.nak(200);
    const message =
      err instanceof SidecarError ? `${err.code}: ${err.message}` : "inference failed";
    await this.#giveUp(exhausted, message);
  }

  /** The queue-wait span (enqueue → pull) and the batch span this item's trace gets. */
  #traceItem(
    tracer: Tracer,
    p: PulledItem,
    batchItems: number,
    batchTokens: number,
  ): { span: Span; parent: typeof p.parent } {
    const common = {
      "shoal.request_id": p.item.requestId,
      "shoal.part": p.item.part,
      "shoal.model": p.item.model,
    };
    tracer
      .startSpan(
        "queue.wait",
        {
          startTime: Number(p.item.enqueuedUnixUs) / 1000,
          attributes: { ...common, "shoal.delivery": p.msg.deliveryCount },
        },
        p.parent,
      )
      .end(p.pulledAtUs / 1000);
    const span = tracer.startSpan(
      "worker.batch",
      {
        startTime: p.pulledAtUs / 1000,
        attributes: {
          ...common,
          "shoal.worker_id": this.#o.workerId,
          "shoal.batch_items": batchItems,
          "shoal.batch_tokens": batchTokens,
        },
      },
      p.parent,
    );
    return { span, parent: p.parent };
  }
}
