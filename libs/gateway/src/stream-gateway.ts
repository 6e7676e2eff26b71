import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import type { Annotate } from "@shoal/annotation";
import type { Catalog, ModelEntry } from "@shoal/config";
import {
  Priority,
  StreamControlSchema,
  StreamEventSchema,
  WorkRequestSchema,
  type StreamControl,
  type StreamEvent,
} from "@shoal/proto";
import type { ResidencyView } from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import type { Principal } from "@shoal/tenants";
import { ModelAccess, type AccessMode } from "./access.js";
import type { TenantAccounting } from "./accounting.js";
import type { AdapterResolver, ListedAdapter } from "./adapter-resolver.js";
import { AdapterNotFoundError, UnavailableError } from "./errors.js";
import {
  DEFAULT_GENERATE_LIMITS,
  validateGenerate,
  type GenerateCall,
  type GenerateLimits,
} from "./generate-call.js";
import { admit, requestTimeoutMs, subscribeAnswers } from "./admission.js";
import { GenerationStream } from "./generation-stream.js";
import { fromWorkError } from "./work-errors.js";
import { refuseUnlessResident } from "./no-wait.js";

export interface StreamGatewayOptions {
  readonly nc: NatsConnection;
  readonly annotator: Annotate;
  readonly catalog: Catalog;
  readonly logger: Logger;
  /** Names this process's stream subject. @default a random id */
  readonly ingressId?: string;
  /** Time until generation starts when the client sets none. @default 30000 */
  readonly defaultTimeoutMs?: number;
  /** @default 300000 */
  readonly maxTimeoutMs?: number;
  /** Streams held at once; past it new ones get RESOURCE_EXHAUSTED. @default 1000 */
  readonly maxStreams?: number;
  /**
   * Events a worker may send beyond what the client has read: the most this ingress buffers
   * per stream. @default 16
   */
  readonly window?: number;
  /** Silence after which a started stream is given up (worker gone). @default 60000 */
  readonly idleTimeoutMs?: number;
  readonly limits?: Partial<GenerateLimits>;
  /** Where models are resident, for `noWait` calls; without it they wait like any other. */
  readonly residency?: ResidencyView;
  /** The published LoRA adapters; without it, a request naming an adapter is NOT_FOUND. */
  readonly adapters?: AdapterResolver;
  /** Whether every call must carry its API key's principal. @default "open" */
  readonly access?: AccessMode;
  /** Per-tenant quotas and usage for calls that carry a principal; none kept without. */
  readonly accounting?: TenantAccounting;
}

/** A generation that has started: its first event has arrived. */
export interface StartedGeneration {
  readonly requestId: string;
  readonly model: ModelEntry;
  readonly n: number;
  readonly stream: GenerationStream;
}

/** Where one ingress process receives the generation streams of the requests it holds. */
export function streamSubject(ingressId: string): string {
  return `shoal.stream.v1.${ingressId}`;
}

/**
 * The ingress side of streamed generation: validates, queues through the annotator like any
 * request, and routes the worker's events (on this process's stream subject) to the
 * {@link GenerationStream} each request reads from. Flow control and cancellation go back to
 * the worker on the control subject the worker names in its events.
 */
export class StreamGateway {
  readonly #o: StreamGatewayOptions;
  readonly #subject: string;
  readonly #streams = new Map<string, GenerationStream>();
  readonly #limits: GenerateLimits;
  #subscription: Subscription | undefined;
  #strays = 0;

  private constructor(options: StreamGatewayOptions) {
    this.#o = options;
    this.#subject = streamSubject(options.ingressId ?? randomUUID().replaceAll("-", ""));
    this.#limits = { ...DEFAULT_GENERATE_LIMITS, ...options.limits };
  }

  static async start(options: StreamGatewayOptions): Promise<StreamGateway> {
    const gateway = new StreamGateway(options);
    gateway.#subscription = await subscribeAnswers(
      options.nc,
      gateway.#subject,
      options.logger,
      (data) => {
        gateway.#onEvent(data);
      },
    );
    return gateway;
  }

  get catalog(): Catalog {
    return this.#o.catalog;
  }

  get limits(): GenerateLimits {
    return this.#limits;
  }

  /** The published LoRA adapters requests may name, when ingress follows the registry. */
  get adapters(): AdapterResolver | undefined {
    return this.#o.adapters;
  }

  /**
   * What a call acting for `caller` may use.
   *
   * @throws UnauthenticatedRequestError when keys are required and `caller` is undefined.
   */
  access(caller: Principal | undefined): ModelAccess {
    return ModelAccess.of(this.#o.catalog, this.#o.access ?? "open", caller);
  }

  /** The published adapters `access` may see, sorted by what a request names. */
  visibleAdapters(access: ModelAccess): ListedAdapter[] {
    const granted = new Set(access.models().map((m) => m.id));
    return (this.#o.adapters?.list() ?? []).filter(
      (a) => granted.has(a.base) && access.seesAdapter(a),
    );
  }

  /** Streams held right now. */
  get streams(): number {
    return this.#streams.size;
  }

  /** Events for streams this ingress no longer holds, or from losing attempts. */
  get strays(): number {
    return this.#strays;
  }

  /**
   * Validates and queues a generation, and resolves once its first event has arrived, so an
   * error that happens before any text (prompt too long, overload, deadline) reaches the
   * client as a plain error rather than in the middle of a stream.
   */
  async generate(
    call: GenerateCall,
    ctx: Context,
    /** Aborted when the client goes away: the generation is cancelled, queued or running. */
    signal?: AbortSignal,
  ): Promise<StartedGeneration> {
    const access = this.access(call.caller);
    const { model, adapter } = validateGenerate(access, call, this.#limits);
    const resolved =
      adapter === undefined
        ? undefined
        : this.#o.adapters?.resolve(model.key, adapter.name, adapter.version);
    // Another tenant's private adapter answers exactly as one that does not exist.
    if (adapter !== undefined && (resolved === undefined || !access.seesAdapter(resolved))) {
      throw new AdapterNotFoundError(call.model);
    }
    const adapterVersion = resolved?.version;
    refuseUnlessResident(this.#o.nc, this.#o.residency, model, call.noWait);
    admit(this.#streams.size, this.#o.maxStreams ?? 1000, "generations");
    const caller = call.caller;
    const release =
      caller === undefined
        ? () => undefined
        : (this.#o.accounting?.admit(caller) ?? (() => undefined));
    const timeoutMs = requestTimeoutMs(call.timeoutMs, this.#o);
    const requestId = randomUUID();
    const n = call.n ?? 1;
    const window = this.#o.window ?? 16;
    const stream = new GenerationStream({
      requestId,
      n,
      window,
      startTimeoutMs: timeoutMs,
      idleTimeoutMs: this.#o.idleTimeoutMs ?? 60_000,
      sendControl: (subject, control) => {
        this.#control(subject, control);
      },
      onEnd: (usage) => {
        this.#streams.delete(requestId);
        release();
        if (caller !== undefined) {
          this.#o.accounting?.used(caller, model, usage.promptTokens, usage.outputTokens);
        }
      },
    });
    this.#streams.set(requestId, stream);
    const onAbort = (): void => {
      stream.cancel();
    };
    if (signal?.aborted === true) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    const request = create(WorkRequestSchema, {
      requestId,
      model: model.id,
      priority: call.priority ?? Priority.NORMAL,
      deadlineUnixMs: BigInt(Date.now() + timeoutMs),
      replySubject: this.#subject,
      task: {
        case: "generate",
        value: {
          input:
            call.messages === undefined
              ? { case: "prompt", value: call.prompt ?? "" }
              : {
                  case: "chat",
                  value: {
                    messages: call.messages.map((m) => ({ role: m.role, content: m.content })),
                  },
                },
          sampling: {
            // What the request leaves out, the model's catalog defaults fill: an instruct
            // model's tuned temperature rather than the sidecar's 1.
            temperature: call.temperature ?? model.sampling?.temperature,
            topP: call.topP ?? model.sampling?.topP,
            topK: call.topK ?? model.sampling?.topK,
            minP: call.minP ?? model.sampling?.minP,
            repetitionPenalty: call.repetitionPenalty ?? model.sampling?.repetitionPenalty,
            seed: call.seed === undefined ? undefined : BigInt(call.seed),
            maxTokens: call.maxTokens,
            stop: [...(call.stop ?? [])],
          },
          n,
          window,
          ...(adapter === undefined || adapterVersion === undefined
            ? {}
            : { adapter: { name: adapter.name, version: adapterVersion } }),
        },
      },
    });
    try {
      const annotation = await this.#o.annotator.annotate(request, ctx);
      if (annotation.error !== undefined) stream.fail(fromWorkError(annotation.error));
    } catch (cause) {
      this.#o.logger.error({ err: cause, request_id: requestId }, "annotation failed");
      stream.fail(new UnavailableError("work queue unavailable", { cause }));
    }
    await stream.started();
    if (stream.ended && signal?.aborted === true) {
      throw new UnavailableError("the client went away before generation started");
    }
    return { requestId, model, n, stream };
  }

  /** Stops taking events and ends every held stream. */
  close(): void {
    this.#subscription?.unsubscribe();
    for (const stream of [...this.#streams.values()]) {
      stream.fail(new UnavailableError("ingress is shutting down"));
    }
  }

  #onEvent(data: Uint8Array): void {
    let event: StreamEvent;
    try {
      event = fromBinary(StreamEventSchema, data);
    } catch (err) {
      this.#o.logger.warn({ err }, "malformed stream event dropped");
      return;
    }
    const stream = this.#streams.get(event.requestId);
    if (stream === undefined) {
      // Nobody waits for this generation any more (answered, timed out, or a redelivery after
      // the answer): tell its worker to stop.
      this.#strays++;
      this.#control(
        event.controlSubject,
        create(StreamControlSchema, { attempt: event.attempt, cancel: true }),
      );
      return;
    }
    stream.deliver(event);
  }

  #control(subject: string, control: StreamControl): void {
    if (subject === "" || this.#o.nc.isClosed()) return;
    try {
      this.#o.nc.publish(subject, toBinary(StreamControlSchema, control));
    } catch (err) {
      this.#o.logger.warn({ err, subject }, "stream control not sent");
    }
  }
}
