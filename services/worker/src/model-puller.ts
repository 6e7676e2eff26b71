import { setTimeout as sleep } from "node:timers/promises";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  context,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import {
  compileLatencyTargetOptions,
  createLatencyModel,
  formBucketedBatch,
  latencyTargetMicros,
  maxPaddedTokensWithin,
  type BatchBudget,
  type LatencyModel,
  type LatencyTarget,
  type LatencyTerms,
} from "@shoal/batching";
import type { BlobStore } from "@shoal/blobs";
import type { ModelEntry } from "@shoal/config";
import { pull, type WorkMessage } from "@shoal/jetstream";
import { ErrorCode } from "@shoal/proto";
import { SidecarError, SidecarTimeoutError, type SidecarClient } from "@shoal/sidecar-client";
import { wallClockUs, type Logger } from "@shoal/telemetry";
import { publishAnswers, publishErrors, type Answer } from "./answers.js";
import { runEmbedBatch } from "./embed-batch.js";
import type { FamilyBatchRunner } from "./family-batch.js";
import { runHeadBatch } from "./head-batch.js";
import { BlobInputs } from "./blob-inputs.js";
import { deadLetter } from "./dead-letter.js";
import { pullUntilStopped } from "./pull-loop.js";
import { attemptOf, retryLater } from "./retry.js";
import type { LocalHandOff } from "./local-hand-off.js";
import { traceWaitedLoad, type ModelLoadRecord } from "./load-trace.js";
import type { ModelBatchMetrics } from "./metrics.js";
import type { DeviceTurns } from "./device-turns.js";
import { decodePulled, type PulledItem, type PulledMessage } from "./pulled-item.js";

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
  /**
   * The batch cost the latency model sizes batches with until it has learned this worker's
   * own (its first batches): the model's measured cost on this hardware, from its bundle.
   * Unset: a rough CPU-encoder guess, badly off for a slow accelerator, whose first batches
   * it then makes far too large.
   */
  readonly batchCostPrior?: LatencyTerms | undefined;
  /** Longest time spent topping a batch up while the server reports more work queued. */
  readonly maxFillWaitMs: number;
  /** Items asked for per pull. */
  readonly pullBatch: number;
  /** Attempts after which a failing item is answered with its error and dead-lettered. */
  readonly maxDeliver: number;
  /**
   * How often items of a running batch tell JetStream they are still being worked on, so a
   * batch longer than the ack wait is not redelivered to another worker meanwhile.
   */
  readonly progressIntervalMs: number;
  /**
   * Batches handed to the sidecar at once: 1 runs them strictly in turn, 2 prefetches one. The
   * prefetched batch is formed late, when the running one is predicted to be about done, from
   * everything in hand by then.
   */
  readonly maxBatchesInFlight: number;
  /**
   * Batches the sidecar runs side by side for this model (its model threads): while fewer are
   * running, the next batch is formed and sent at once; only when every thread is busy is it
   * formed late. @default 1
   */
  readonly modelThreads?: number;
  /**
   * The machine-local queue shared with the other workers on this host. When set, put-back
   * items go there instead of back over the network, and this worker takes what the others put
   * back before it pulls from JetStream.
   */
  readonly localQueue?: LocalHandOff;
  /** Longest a batch may run before the sidecar is deemed stalled. */
  readonly batchTimeoutMs: number;
  /**
   * The accelerator's turns, shared with the worker's other models: a batch is formed only once
   * the device can take it. Without, each model sends its batches on its own.
   */
  readonly deviceTurns?: DeviceTurns | undefined;
  /** Opens the blob store offloaded inputs are read from. */
  readonly openBlobs: () => Promise<BlobStore>;
  /** Called when a batch timed out: the sidecar is replaced. */
  readonly onStall: (reason: string) => void;
  /** This model's batch metrics; none recorded without. */
  readonly metrics?: ModelBatchMetrics | undefined;
  /** The load that made the model resident, for the traces of the requests that waited for it. */
  readonly load?: ModelLoadRecord | undefined;
  readonly workerId: string;
  readonly logger: Logger;
  readonly tracer: Tracer;
}

/**
 * How long an idle pull waits on the server before asking again. A pull request cannot be
 * withdrawn, so this also bounds how long shutdown waits for an idle loop to notice.
 */
const LONG_POLL_MS = 1_000;

/**
 * How long before the running batch is predicted to finish the prefetched one is formed and
 * handed to the sidecar: enough for formation and the socket write, so the accelerator does not
 * wait, and no earlier, so the batch takes in what arrived meanwhile.
 */
const FORM_LEAD_MS = 2;

/**
 * What JetStream still holds after `messages`, as the top-up needs it. The pending count on a
 * delivery leaves out items waiting for redelivery (NAKed, or past their ack wait), so after a
 * redelivered item more may be waiting even when it says 0: one `no_wait` pull finds out,
 * rather than starting a batch of one.
 */
function queuedAfter(messages: readonly WorkMessage[]): number {
  const last = messages.at(-1);
  if (last === undefined) return 0;
  return messages.some((m) => m.deliveryCount > 1) ? Math.max(1, last.pending) : last.pending;
}

/** Where the first items of a round came from, and whether JetStream said more are queued. */
interface FirstItems {
  readonly messages: WorkMessage[];
  /** Work still queued in JetStream after these, as far as known (1 when unknown). */
  readonly queued: number;
}

/**
 * Pulls one model's work and runs it batch by batch. It asks for work only when it can start
 * a batch, tops the batch up with what is already queued (never waiting longer than the fill
 * wait), puts back what does not fit, and acks each item only after its answer is published.
 * With `maxBatchesInFlight` 2 the next batch is formed and handed to the sidecar while the
 * current one computes, so the accelerator never waits on a pull or a publish.
 */
export class ModelPuller {
  readonly #o: ModelPullerOptions;
  readonly #latency: LatencyModel;
  readonly #target: LatencyTarget;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #blobs: BlobInputs;
  /** How this model's family runs a batch on the sidecar. */
  readonly #runner: FamilyBatchRunner;
  /**
   * A long poll still open on JetStream: a pull request cannot be withdrawn, so when the local
   * queue answered first it is kept for the next round rather than abandoned with a message.
   */
  #outstanding: Promise<WorkMessage[]> | undefined;
  /**
   * When each of the model's threads is predicted to be done with the batches handed to it
   * (performance.now() ms; 0 when idle).
   */
  readonly #threadsFreeAt: number[];
  #stopping = false;
  #loop: Promise<void> | undefined;
  #putBackItems = 0;

  constructor(options: ModelPullerOptions) {
    this.#o = options;
    this.#latency = createLatencyModel(
      options.batchCostPrior === undefined ? {} : { prior: options.batchCostPrior },
    );
    this.#target = compileLatencyTargetOptions({ maxTargetMicros: options.batchTargetMs * 1000 });
    this.#blobs = new BlobInputs(options);
    this.#threadsFreeAt = new Array<number>(Math.max(1, options.modelThreads ?? 1)).fill(0);
    this.#runner = options.model.family === "embedding" ? runEmbedBatch : runHeadBatch;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Items pulled and handed back unrun since this puller started (the heartbeat reports it). */
  putBacks(): number {
    return this.#putBackItems;
  }

  /** Stops pulling; the batches in hand finish (or are put back) before this resolves. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#loop;
    await this.#blobs.close();
  }

  /**
   * The batch budget for this round: the largest padded-token count the latency model, learned
   * from this worker's own batches, predicts to finish within the target (the configured batch
   * latency, or less when an item's deadline is closer), never above the hard ceiling. When
   * nothing fits, a one-token budget still runs the most urgent item alone.
   */
  #budgetFor(pulled: readonly PulledMessage[], nowUnixMs: number): BatchBudget {
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
    await pullUntilStopped(
      () => this.#once(),
      () => this.#isStopping(),
      this.#o.nc,
      { logger: this.#o.logger, model: this.#o.model.id, what: "pull cycle" },
    );
    await Promise.all(this.#inFlight);
    const left = await this.#outstanding?.catch(() => []);
    this.#outstanding = undefined;
    if (left !== undefined) await this.#putBack(left);
  }

  /**
   * Runs a batch without waiting for it; `#once` waits when the in-flight limit is reached.
   * The device turn it ran in, if any, ends with it.
   */
  #dispatch(
    sidecar: SidecarClient,
    batch: readonly PulledMessage[],
    endTurn: (() => void) | undefined,
  ): void {
    const inputs = batch.reduce((n, p) => n + p.inputs, 0);
    const longest = Math.max(...batch.map((p) => p.maxInputTokens));
    const predictedMs =
      this.#latency.predict({ sequences: inputs, paddedTokens: inputs * longest }) / 1000;
    // It goes to the thread free first; queued behind a running batch, it starts when that
    // one ends.
    const free = this.#threadsFreeAt;
    const thread = free.indexOf(Math.min(...free));
    free[thread] = Math.max(performance.now(), free[thread] ?? 0) + predictedMs;
    const running: Promise<void> = this.#execute(sidecar, batch)
      .catch((err: unknown) => {
        this.#o.logger.error({ err, model: this.#o.model.id }, "batch bookkeeping failed");
      })
      .finally(() => {
        endTurn?.();
        this.#inFlight.delete(running);
        // Predictions err: once nothing runs, the next batch's end counts from its own start.
        if (this.#inFlight.size === 0) this.#threadsFreeAt.fill(0);
      });
    this.#inFlight.add(running);
  }

  async #once(): Promise<void> {
    while (this.#inFlight.size >= this.#o.maxBatchesInFlight) await Promise.race(this.#inFlight);
    const sidecar = await this.#o.sidecar();
    const first = await this.#firstItems();
    if (first.messages.length === 0) return;
    const pulled = await this.#decode(first.messages);
    const turns = this.#o.deviceTurns;
    const waited = turns !== undefined && turns.waiting > 0;
    const endTurn = await turns?.acquire();
    let handedOn = false;
    try {
      // After a wait for the device, more has likely been queued than the first pull said.
      await this.#topUp(pulled, waited ? Math.max(1, first.queued) : first.queued);
      if (this.#inFlight.size >= this.#threadsFreeAt.length && !this.#isStopping()) {
        // Late formation: with every model thread busy, the next batch is formed when one of
        // them is about to be free, from what is in hand then, not from what happened to be
        // queued when the last one started.
        await this.#untilRunningNearlyDone();
        await this.#topUp(pulled, 1);
      }
      const now = Date.now();
      const { batch, putBack, expired } = formBucketedBatch(
        pulled,
        this.#budgetFor(pulled, now),
        now,
      );
      await this.#putBackTraced(putBack, "over batch budget");
      await this.#answerExpired(expired);
      if (this.#isStopping()) {
        await this.#putBackTraced(batch, "worker stopping");
        return;
      }
      const ready = await this.#blobs.resolve(batch);
      if (ready.length === 0) return;
      if (this.#o.logger.isLevelEnabled("debug")) this.#logFormed(ready, pulled, now);
      this.#dispatch(sidecar, ready, endTurn);
      handedOn = true;
    } finally {
      if (!handedOn) endTurn?.();
    }
  }

  /** What a batch made of its budget, for tools/bench (fill ratio, put-back latency). */
  #logFormed(batch: readonly PulledMessage[], pulled: readonly PulledMessage[], now: number): void {
    const inputs = batch.reduce((n, p) => n + p.inputs, 0);
    const padded = inputs * Math.max(...batch.map((p) => p.maxInputTokens));
    this.#o.logger.debug(
      {
        seqs: batch.map((p) => p.msg.streamSequence),
        at_us: wallClockUs(),
        inputs,
        padded_tokens: padded,
        real_tokens: batch.reduce((n, p) => n + p.totalTokens, 0),
        budget_padded_tokens: this.#budgetFor(pulled, now).maxPaddedTokens,
      },
      "batch started",
    );
  }

  /**
   * The first items of a round: what co-located workers put back, else a JetStream long poll.
   * With a local queue both are waited on at once, so an idle worker starts on a hand-off as
   * soon as it is made; whichever answers second is not lost (a late take answer joins this
   * round, an open long poll is kept for the next).
   */
  async #firstItems(): Promise<FirstItems> {
    const local = this.#o.localQueue;
    const longPoll = { batch: 1, expiresMs: LONG_POLL_MS };
    if (local === undefined) {
      const messages = await pull(this.#o.nc, this.#o.stream, this.#o.consumer, longPoll);
      return { messages, queued: queuedAfter(messages) };
    }
    const poll = (this.#outstanding ??= pull(
      this.#o.nc,
      this.#o.stream,
      this.#o.consumer,
      longPoll,
    ));
    const fromJetStream = poll.then((messages) => ({ local: false, messages }));
    const cancel = new AbortController();
    const take = local.take(this.#o.pullBatch, LONG_POLL_MS, cancel.signal);
    const fromLocal = take.then(
      (messages) => ({ local: true, messages }),
      // No local queue now: JetStream alone, until it is back.
      () => fromJetStream,
    );
    const winner = await Promise.race([fromJetStream, fromLocal]);
    if (winner.local) return { messages: winner.messages, queued: 1 };
    this.#outstanding = undefined;
    cancel.abort();
    const late = await take.catch(() => []);
    return {
      messages: [...winner.messages, ...late],
      queued: late.length > 0 ? 1 : queuedAfter(winner.messages),
    };
  }

  /**
   * Tops the batch up with what is ready now — the local queue's put-backs first, then what
   * JetStream reports queued — never waiting longer than the fill wait, and asking each time
   * for no more items than there are free input slots (every item carries at least one input),
   * which keeps over-pulling, and the put-backs it costs, small.
   */
  async #topUp(pulled: PulledMessage[], queuedInJetStream: number): Promise<void> {
    const { nc, stream, consumer } = this.#o;
    const room = (): number => this.#o.budget.maxInputs - pulled.reduce((n, p) => n + p.inputs, 0);
    const local = this.#o.localQueue;
    if (local !== undefined && room() > 0) {
      const taken = await local.take(Math.min(this.#o.pullBatch, room()), 0).catch(() => []);
      pulled.push(...(await this.#decode(taken)));
    }
    const fillUntil = performance.now() + this.#o.maxFillWaitMs;
    // The server says how much is still queued with every message: when nothing is, the batch
    // starts now rather than after the fill wait.
    let queued = queuedInJetStream;
    while (!this.#isStopping() && queued > 0 && room() > 0) {
      const more = await pull(nc, stream, consumer, { batch: Math.min(this.#o.pullBatch, room()) });
      pulled.push(...(await this.#decode(more)));
      queued = queuedAfter(more);
      if (performance.now() >= fillUntil) break;
    }
  }

  /**
   * Waits until a model thread is predicted to be `FORM_LEAD_MS` from done with what it runs,
   * or a batch is done.
   */
  async #untilRunningNearlyDone(): Promise<void> {
    const waitMs = Math.min(...this.#threadsFreeAt) - FORM_LEAD_MS - performance.now();
    if (waitMs <= 0) return;
    const timer = new AbortController();
    await Promise.race([
      sleep(waitMs, undefined, { signal: timer.signal }).catch(() => undefined),
      Promise.race(this.#inFlight),
    ]);
    timer.abort();
  }

  /** Puts decoded messages back, with a `queue.put_back` span in each item's trace. */
  async #putBackTraced(pulled: readonly PulledMessage[], reason: string): Promise<void> {
    if (pulled.length === 0) return;
    const spans = pulled.flatMap((m) =>
      m.items.map((p) =>
        this.#o.tracer.startSpan(
          "queue.put_back",
          {
            attributes: {
              "shoal.request_id": p.item.requestId,
              "shoal.model": p.item.model,
              "shoal.reason": reason,
            },
          },
          p.parent,
        ),
      ),
    );
    const outcome = await this.#putBack(pulled.map((p) => p.msg));
    for (const span of spans) {
      span.setAttribute("shoal.put_back_to", outcome.local > 0 ? "local_queue" : "jetstream");
      span.end();
    }
  }

  /** Puts items back: to the machine-local queue when there is one, else NAK to JetStream. */
  async #putBack(messages: readonly WorkMessage[]): Promise<{ local: number; naked: number }> {
    if (messages.length === 0) return { local: 0, naked: 0 };
    this.#putBackItems += messages.length;
    this.#o.metrics?.putBack(messages.length);
    const local = this.#o.localQueue;
    const atUs = wallClockUs();
    const seqs = messages.map((m) => m.streamSequence);
    let outcome = { local: 0, naked: messages.length };
    if (local === undefined) for (const m of messages) m.nak();
    else outcome = await local.putBack(messages);
    // Sequences and times let tools/bench/put-back-latency.ts follow an item to where it starts.
    this.#o.logger.debug({ seqs, at_us: atUs, ...outcome }, "put back");
    return outcome;
  }

  /**
   * Decodes pulled messages; a malformed one is dead-lettered. How often an item was delivered
   * does not matter here: put-backs and redeliveries after a worker died are no fault of the
   * item, and its deadline bounds them. Failed attempts are counted where they fail.
   */
  async #decode(messages: readonly WorkMessage[]): Promise<PulledMessage[]> {
    const decoded: PulledMessage[] = [];
    for (const msg of messages) {
      const pulled = decodePulled(msg);
      if (pulled === undefined) {
        this.#o.logger.error(
          { subject: msg.subject, seq: msg.streamSequence },
          "malformed work item dead-lettered",
        );
        await deadLetter(this.#o.js, this.#o.model.key, msg, "malformed work item", this.#o.logger);
        this.#o.metrics?.deadLettered("malformed");
      } else {
        decoded.push(pulled);
      }
    }
    return decoded;
  }

  /** Answers messages' items with an error and moves the messages to the dead-letter stream. */
  async #giveUp(messages: readonly PulledMessage[], message: string): Promise<void> {
    if (messages.length === 0) return;
    publishErrors(
      this.#o.nc,
      this.#o.workerId,
      messages.flatMap((m) => m.items.map((p) => p.item)),
      ErrorCode.INTERNAL,
      message,
    );
    await this.#o.nc.flush();
    for (const m of messages) {
      await deadLetter(this.#o.js, this.#o.model.key, m.msg, message, this.#o.logger);
      this.#o.metrics?.deadLettered("gave_up");
    }
  }

  async #answerExpired(expired: readonly PulledMessage[]): Promise<void> {
    if (expired.length === 0) return;
    this.#o.metrics?.expired(expired.reduce((n, m) => n + m.items.length, 0));
    publishErrors(
      this.#o.nc,
      this.#o.workerId,
      expired.flatMap((m) => m.items.map((p) => p.item)),
      ErrorCode.DEADLINE_EXCEEDED,
      EXPIRED,
    );
    await this.#o.nc.flush();
    for (const m of expired) m.msg.ack();
  }

  async #execute(sidecar: SidecarClient, batch: readonly PulledMessage[]): Promise<void> {
    const { nc, tracer, workerId } = this.#o;
    const startedUs = wallClockUs();
    const { live, expired } = splitExpired(batch, Date.now());
    this.#o.metrics?.expired(expired.length);
    const answers: Answer[] = expired.map((p) => ({
      item: p.item,
      outcome: { case: "error", code: ErrorCode.DEADLINE_EXCEEDED, message: EXPIRED },
    }));
    const batchTokens = live.reduce((n, p) => n + p.item.totalTokens, 0);
    const spans = live.map((p) => ({
      p,
      ...this.#traceItem(tracer, p, live.length, batchTokens),
    }));
    const inputs = live.reduce((n, p) => n + p.inputs, 0);
    const progress = setInterval(() => {
      for (const m of batch) m.msg.working();
    }, this.#o.progressIntervalMs);
    try {
      // Every item may have expired while the batch formed: then they are answered above and
      // nothing runs.
      if (live.length > 0) {
        const items = spans.map((s) => ({ p: s.p, ctx: trace.setSpan(s.parent, s.span) }));
        const done = await this.#runner(sidecar, this.#o, { items, startedUs, batchTokens });
        // Measured against what the latency model predicted before it learns from this batch.
        this.#o.metrics?.batchDone({
          inputs: done.observation.sequences,
          paddedTokens: done.observation.paddedTokens,
          computeSeconds: done.observation.micros / 1e6,
          predictedSeconds: this.#latency.predict(done.observation) / 1e6,
        });
        this.#latency.observe(done.observation);
        answers.push(...done.answers);
      }
      publishAnswers(nc, workerId, answers);
      await nc.flush();
      for (const m of batch) m.msg.ack();
      if (this.#o.logger.isLevelEnabled("debug")) {
        // With "batch started", shows how batches overlapped (prefetch, model threads).
        const seqs = batch.map((m) => m.msg.streamSequence);
        this.#o.logger.debug({ seqs, at_us: wallClockUs() }, "batch answered");
      }
      for (const s of spans) {
        if (this.#o.logger.isLevelEnabled("debug")) {
          context.with(trace.setSpan(s.parent, s.span), () => {
            this.#o.logger.debug(
              { request_id: s.p.item.requestId, part: s.p.item.part, batch_items: inputs },
              "part answered",
            );
          });
        }
        s.span.end();
      }
    } catch (err) {
      if (err instanceof SidecarTimeoutError) this.#o.onStall(err.message);
      this.#o.metrics?.batchFailed();
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
   * A batch the sidecar could not run. Messages go back for another attempt until they have
   * had `maxDeliver`; then the client hears the cause and the message is dead-lettered.
   */
  async #failed(batch: readonly PulledMessage[], err: unknown): Promise<void> {
    this.#o.logger.error({ err, model: this.#o.model.id, messages: batch.length }, "batch failed");
    const exhausted = batch.filter((m) => attemptOf(m.msg) >= this.#o.maxDeliver);
    await Promise.all(
      batch
        .filter((m) => !exhausted.includes(m))
        .map((m) => retryLater(this.#o.js, m.msg, this.#o.logger)),
    );
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
  ): { span: Span; parent: Context } {
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
          attributes: { ...common, "shoal.delivery": p.delivery },
        },
        p.parent,
      )
      .end(p.pulledAtUs / 1000);
    traceWaitedLoad(
      tracer,
      this.#o.load,
      p.parent,
      Number(p.item.enqueuedUnixUs) / 1000,
      this.#o.model.key,
    );
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

/** Why an item was answered instead of computed: its deadline passed before its batch ran. */
const EXPIRED = "deadline passed while queued";

/** A batch's items, less those whose deadline has passed (answered, never computed). */
function splitExpired(
  batch: readonly PulledMessage[],
  nowUnixMs: number,
): { live: PulledItem[]; expired: PulledItem[] } {
  const live: PulledItem[] = [];
  const expired: PulledItem[] = [];
  for (const m of batch) {
    for (const p of m.items) {
      const deadline = Number(p.item.deadlineUnixMs);
      (deadline !== 0 && deadline <= nowUnixMs ? expired : live).push(p);
    }
  }
  return { live, expired };
}
