import { fromBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  ensureRoutedStream,
  ensureRouterConsumer,
  ensureWorkStream,
  parseWorkSubject,
  pull,
  routedSubject,
  type WorkMessage,
} from "@shoal/jetstream";
import { WorkBundleSchema, WorkResultsSchema } from "@shoal/proto";
import type { Logger } from "@shoal/telemetry";
import { Chooser, type RoutingPolicy } from "./policy.js";
import { WorkerView } from "./worker-view.js";

export interface RouterOptions {
  readonly nc: NatsConnection;
  readonly policy: RoutingPolicy;
  /** How often the view takes in the completions seen since the last refresh, ms. */
  readonly refreshMs: number;
  /** Each worker's id and the model keys it serves. */
  readonly workers: ReadonlyMap<string, readonly string[]>;
  /** Items taken from the work stream per pull. @default 256 */
  readonly pullBatch?: number;
  readonly logger: Logger;
}

/**
 * How long an item of a model no worker serves waits before it is offered again: short, since
 * with an autoscaler a replica may be ready any moment, as a proxy would hold the request and
 * send it then.
 */
const UNSERVED_RETRY_MS = 200;

/**
 * A top-down router, for the bench that compares it with Shoal's pull scheduling: it takes
 * every item from the work stream and pushes it to one worker's private subject in
 * SHOAL_ROUTED, picked by its policy from a view of the workers refreshed every `refreshMs`.
 *
 * The view learns completions the way a proxying router does, from the answers: it listens to
 * every reply subject and counts each answer for the worker that sent it (`WorkResult.worker_id`).
 * An item is acked on the work stream only once its routed copy is stored, and the copy carries
 * the original's headers (deadline, trace context) and a message id from its stream sequence,
 * so a router that dies between the two steps duplicates nothing.
 */
export class Router {
  readonly #o: RouterOptions;
  readonly #js: JetStreamClient;
  readonly #view = new WorkerView();
  readonly #choosers = new Map<string, Chooser>();
  readonly #completed = new Map<string, number>();
  readonly #stream: string;
  readonly #consumer: string;
  readonly #answers: Subscription;
  readonly #refresh: NodeJS.Timeout;
  readonly #loop: Promise<void>;
  #stopping = false;
  #routedCount = 0;
  readonly #routedPerModel = new Map<string, number>();

  private constructor(o: RouterOptions, stream: string, consumer: string) {
    this.#o = o;
    this.#js = jetstream(o.nc);
    this.#stream = stream;
    this.#consumer = consumer;
    for (const [worker, models] of o.workers) this.#view.join(worker, models);
    this.#answers = o.nc.subscribe("shoal.reply.v1.>", {
      callback: (err, msg) => {
        if (err !== null) return;
        this.#countAnswer(msg.data);
      },
    });
    this.#refresh = setInterval(() => {
      this.#view.refresh();
    }, o.refreshMs);
    this.#loop = this.#run();
  }

  static async start(o: RouterOptions): Promise<Router> {
    const jsm = await jetstreamManager(o.nc);
    const stream = await ensureWorkStream(jsm);
    const consumer = await ensureRouterConsumer(jsm, stream);
    await ensureRoutedStream(jsm);
    return new Router(o, stream, consumer);
  }

  /**
   * Sets the models `worker` is sent from now on (an autoscaler resizing replica sets): a
   * worker that no longer serves a model gets none of its new items, and finishes what it has.
   */
  serve(worker: string, models: readonly string[]): void {
    this.#view.join(worker, models);
  }

  /** Work items routed since start (a message may carry several). */
  get routed(): number {
    return this.#routedCount;
  }

  /** Work items routed since start, per model key: the arrival rates an autoscaler reads. */
  routedPerModel(): ReadonlyMap<string, number> {
    return this.#routedPerModel;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#loop;
    clearInterval(this.#refresh);
    this.#answers.unsubscribe();
  }

  #isStopping(): boolean {
    return this.#stopping;
  }

  #countAnswer(data: Uint8Array): void {
    let results: readonly { readonly workerId: string }[];
    try {
      results = fromBinary(WorkResultsSchema, data).results;
    } catch {
      return;
    }
    for (const { workerId } of results) {
      const n = (this.#completed.get(workerId) ?? 0) + 1;
      this.#completed.set(workerId, n);
      this.#view.report(workerId, n);
    }
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      let messages: WorkMessage[];
      try {
        // A long poll for one item returns as soon as it arrives; a pull for many would wait
        // for all of them (or its expiry) and hold the first one back. What else is queued by
        // then comes with one no-wait pull.
        messages = await pull(this.#o.nc, this.#stream, this.#consumer, {
          batch: 1,
          expiresMs: 500,
        });
        if (messages.length > 0) {
          messages.push(
            ...(await pull(this.#o.nc, this.#stream, this.#consumer, {
              batch: (this.#o.pullBatch ?? 256) - 1,
            })),
          );
        }
      } catch (err) {
        // stop() may have been called while the pull was open.
        if (this.#isStopping() || this.#o.nc.isClosed()) return;
        this.#o.logger.warn({ err }, "router pull failed; retrying");
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      await Promise.all(messages.map((m) => this.#route(m)));
    }
  }

  async #route(msg: WorkMessage): Promise<void> {
    const parsed = parseWorkSubject(msg.subject);
    if (parsed === undefined) {
      msg.term(`not a work subject: ${msg.subject}`);
      return;
    }
    const candidates = this.#view.serving(parsed.modelKey);
    if (candidates.length === 0) {
      this.#o.logger.debug({ model: parsed.modelKey }, "no worker serves this model; item held");
      msg.nak(UNSERVED_RETRY_MS);
      return;
    }
    let chooser = this.#choosers.get(parsed.modelKey);
    if (chooser === undefined) {
      chooser = new Chooser(this.#o.policy);
      this.#choosers.set(parsed.modelKey, chooser);
    }
    const worker = chooser.choose(candidates, this.#view);
    // Workers report completions per item, so sends count items too, not messages.
    const items = itemsIn(msg.data);
    // Counted before the publish is confirmed: the items of one pull are routed concurrently,
    // and each must see the ones chosen before it.
    this.#view.sent(worker, items);
    try {
      await this.#js.publish(routedSubject(worker, parsed.modelKey, parsed.bucket), msg.data, {
        ...(msg.headers === undefined ? {} : { headers: msg.headers }),
        msgID: `routed-${msg.streamSequence}`,
      });
    } catch (err) {
      this.#o.logger.warn({ err, worker }, "routed publish failed; item offered again");
      this.#view.unsent(worker, items);
      msg.nak(100);
      return;
    }
    this.#routedCount += items;
    this.#routedPerModel.set(
      parsed.modelKey,
      (this.#routedPerModel.get(parsed.modelKey) ?? 0) + items,
    );
    msg.ack();
  }
}

/** Work items a message carries; 1 for one that does not decode (its worker dead-letters it). */
function itemsIn(data: Uint8Array): number {
  try {
    return Math.max(1, fromBinary(WorkBundleSchema, data).items.length);
  } catch {
    return 1;
  }
}
