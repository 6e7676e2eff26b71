import { randomUUID } from "node:crypto";
import { create, fromBinary } from "@bufbuild/protobuf";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import {
  Priority,
  WorkRequestSchema,
  WorkResultsSchema,
  type WorkRequest,
  type WorkResult,
} from "@shoal/proto";
import type { Annotate } from "@shoal/annotation";
import type { Catalog, ModelEntry } from "@shoal/config";
import { replySubject } from "@shoal/jetstream";
import type { ResidencyView } from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import type { Principal } from "@shoal/tenants";
import { ModelAccess, type AccessMode } from "./access.js";
import { answeredTokens, type TenantAccounting } from "./accounting.js";
import {
  DeadlineExceededError,
  InternalError,
  UnavailableError,
  type RequestError,
} from "./errors.js";
import type { BlobOffload } from "./offload.js";
import { admit, requestTimeoutMs, subscribeAnswers } from "./admission.js";
import { embedRequest, type EmbedCall, type EmbedDeps, type EmbedOutcome } from "./embed.js";
import { PendingRequests, type Held } from "./pending.js";
import type { Submitted, TaskCall, WorkTask } from "./submission.js";
import type { EmbedLimits } from "./validate.js";
import { fromWorkError } from "./work-errors.js";
import { refuseUnlessResident } from "./no-wait.js";

export interface GatewayOptions {
  readonly nc: NatsConnection;
  readonly annotator: Annotate;
  readonly catalog: Catalog;
  readonly logger: Logger;
  /** Names this process's reply subject. @default a random id */
  readonly ingressId?: string;
  /** Deadline for requests whose client set none. @default 30000 */
  readonly defaultTimeoutMs?: number;
  /** Longest deadline a client may ask for. @default 300000 */
  readonly maxTimeoutMs?: number;
  /** Requests held at once; past it new ones are refused with RESOURCE_EXHAUSTED. @default 10000 */
  readonly maxPending?: number;
  readonly limits?: Partial<EmbedLimits>;
  /** Stores inputs too large for the queue; without it they are refused by `maxInputChars`. */
  readonly offload?: BlobOffload;
  /** Where models are resident, for `noWait` calls; without it they wait like any other. */
  readonly residency?: ResidencyView;
  /** Whether every call must carry its API key's principal. @default "open" */
  readonly access?: AccessMode;
  /** Per-tenant quotas and usage for calls that carry a principal; none kept without. */
  readonly accounting?: TenantAccounting;
}

/**
 * The ingress side of the pipeline: validates a request, annotates and queues it (in this
 * process), holds it until every part is answered on this process's reply subject, and
 * reassembles the answer. Waiting is a promise per request, so no request blocks another.
 */
export class Gateway {
  readonly #options: GatewayOptions;
  readonly #pending = new PendingRequests();
  readonly #replySubject: string;
  readonly #embedding: EmbedDeps;
  #subscription: Subscription | undefined;

  private constructor(options: GatewayOptions) {
    this.#options = options;
    this.#replySubject = replySubject(options.ingressId ?? randomUUID().replaceAll("-", ""));
    this.#embedding = {
      access: (caller) => this.access(caller),
      limits: {
        maxInputs: options.limits?.maxInputs ?? 2048,
        maxInputChars: options.limits?.maxInputChars ?? 1_000_000,
      },
      offload: options.offload,
      annotator: options.annotator,
      admit: (model, call) => this.#admit(model, call),
      submit: (model, task, call, ctx) => this.#submitAdmitted(model, task, call, ctx),
    };
  }

  /** Subscribes to the reply subject before any request can be queued. */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const gateway = new Gateway(options);
    gateway.#subscription = await subscribeAnswers(
      options.nc,
      gateway.#replySubject,
      options.logger,
      (data) => {
        gateway.#onReply(data);
      },
    );
    return gateway;
  }

  get catalog(): Catalog {
    return this.#options.catalog;
  }

  /**
   * What a call acting for `caller` may use.
   *
   * @throws UnauthenticatedRequestError when keys are required and `caller` is undefined.
   */
  access(caller: Principal | undefined): ModelAccess {
    return ModelAccess.of(this.#options.catalog, this.#options.access ?? "open", caller);
  }

  /** Requests held right now. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Answers dropped because their part had already been answered (redeliveries). */
  get duplicateAnswers(): number {
    return this.#pending.duplicates;
  }

  /**
   * Validates, queues and assembles an embedding request (`embed.ts`): the embedding family
   * on top of the family-agnostic {@link submit}.
   */
  embed(call: EmbedCall, ctx: Context): Promise<EmbedOutcome> {
    return embedRequest(this.#embedding, call, ctx);
  }

  /**
   * Queues a task the caller has validated (rerank, classify, extract: see `heads.ts`) and
   * waits for every part's outcome, in part order.
   */
  async submit(
    model: ModelEntry,
    task: WorkTask,
    call: TaskCall,
    ctx: Context,
  ): Promise<Submitted> {
    const release = this.#admit(model, call);
    try {
      return await this.#submitAdmitted(model, task, call, ctx);
    } finally {
      release();
    }
  }

  /** {@link submit} past admission, which the caller has checked. */
  async #submitAdmitted(
    model: ModelEntry,
    task: WorkTask,
    call: TaskCall,
    ctx: Context,
  ): Promise<Submitted> {
    const timeoutMs = requestTimeoutMs(call.timeoutMs, this.#options);
    const requestId = randomUUID();
    const request = create(WorkRequestSchema, {
      requestId,
      model: model.id,
      priority: call.priority ?? Priority.NORMAL,
      deadlineUnixMs: BigInt(Date.now() + timeoutMs),
      replySubject: this.#replySubject,
      task,
    });
    const held = this.#pending.hold(
      requestId,
      timeoutMs,
      () => new DeadlineExceededError(`no answer within ${timeoutMs} ms`),
    );
    await this.#queue(request, held, ctx);
    const queuedAt = performance.now();
    const assembled = await held.answer;
    if (call.caller !== undefined) {
      this.#options.accounting?.used(call.caller, model, answeredTokens(assembled), 0);
    }
    return { requestId, assembled, queuedAt };
  }

  /**
   * Refuses now what cannot be taken: past `maxPending` held, `noWait` and not resident, or
   * its tenant over a quota.
   *
   * @returns the release of the tenant's admission, called when the request is over.
   */
  #admit(model: ModelEntry, call: TaskCall): () => void {
    refuseUnlessResident(this.#options.nc, this.#options.residency, model, call.noWait);
    admit(this.#pending.size, this.#options.maxPending ?? 10_000, "requests");
    return call.caller === undefined
      ? () => undefined
      : (this.#options.accounting?.admit(call.caller) ?? (() => undefined));
  }

  /**
   * Annotates and queues the request. Failures end the held request, so the caller's one await
   * on the answer sees every outcome.
   */
  async #queue(request: WorkRequest, held: Held, ctx: Context): Promise<void> {
    try {
      const annotation = await this.#options.annotator.annotate(request, ctx);
      if (annotation.error === undefined) held.expect(annotation.parts);
      else this.#pending.fail(request.requestId, fromWorkError(annotation.error));
    } catch (cause) {
      this.#options.logger.error(
        { err: cause, request_id: request.requestId },
        "annotation failed",
      );
      this.#pending.fail(
        request.requestId,
        new UnavailableError("work queue unavailable", { cause }),
      );
    }
  }

  /** Stops taking answers and fails what is still held. */
  async close(): Promise<void> {
    this.#subscription?.unsubscribe();
    this.#pending.failAll(() => new UnavailableError("ingress is shutting down"));
    await Promise.resolve();
  }

  /** A worker's answers for this ingress from one batch (`WorkResults`), settled in turn. */
  #onReply(data: Uint8Array): void {
    let results: readonly WorkResult[];
    try {
      results = fromBinary(WorkResultsSchema, data).results;
    } catch (err) {
      this.#options.logger.warn({ err }, "malformed work results dropped");
      return;
    }
    for (const result of results) this.#pending.settle(result, resultError);
  }
}

/** The error a worker's result carries, if it is one. */
function resultError(r: WorkResult): RequestError | undefined {
  if (r.outcome.case === "error") return fromWorkError(r.outcome.value);
  if (r.outcome.case === undefined) return new InternalError("worker sent an empty result");
  return undefined;
}
