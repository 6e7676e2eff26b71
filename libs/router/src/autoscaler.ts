import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import {
  readSubjectCounts,
  ROUTED_PREFIX,
  ROUTED_STREAM,
  WORK_PREFIX,
  WORK_STREAM,
} from "@shoal/jetstream";
import {
  controlSubject,
  decodeControlReply,
  decodeHeartbeat,
  encodeControl,
  heartbeatSubject,
  Recommendations,
  type ControlReply,
  type Heartbeat,
} from "@shoal/residency";
import type { Logger } from "@shoal/telemetry";
import {
  planAutoscale,
  type AutoscaleAction,
  type AutoscalePolicyOptions,
  type ReplicaPhase,
} from "./autoscale-policy.js";

/** What the autoscaler changes in the router (which models each worker is sent) and reads. */
export interface Membership {
  serve(worker: string, models: readonly string[]): void;
  /** Items routed since start, per model key. */
  routedPerModel(): ReadonlyMap<string, number>;
}

export interface AutoscalerOptions {
  readonly nc: NatsConnection;
  /** The node whose workers' heartbeats say what accelerators there are. */
  readonly node: string;
  /** The models to scale, by key, with the memory each takes. */
  readonly models: ReadonlyMap<string, number>;
  readonly policy: AutoscalePolicyOptions;
  /** How often lag is read and replicas resized, ms (KEDA polls every 30 s by default). */
  readonly syncMs: number;
  /** Arrival rates (for `policy.fillMemory`) are measured over this long, ms. @default 60000 */
  readonly demandWindowMs?: number;
  /** Longest a worker may take to answer a load or unload. @default 600000 */
  readonly controlTimeoutMs?: number;
  readonly membership: Membership;
  /** Told of every load and unload that succeeded (metrics). */
  readonly onChange?: (change: "load" | "unload", model: string) => void;
  readonly logger: Logger;
}

interface WorkerState {
  capacityBytes: number;
  readonly replicas: Map<string, ReplicaPhase>;
  busy: boolean;
}

/**
 * Drives {@link planAutoscale} against a live fleet: learns the accelerators from the workers'
 * heartbeats, reads each replica's lag from the routed stream and what the router holds from the
 * work stream (one request each a round), loads and unloads models on the workers over their
 * control subjects, and tells the router which workers to send each model to. Workers are run
 * with a node id, so they load nothing until told.
 */
export class Autoscaler {
  readonly #o: AutoscalerOptions;
  readonly #jsm: JetStreamManager;
  readonly #workers = new Map<string, WorkerState>();
  readonly #recommendations = new Recommendations();
  readonly #heartbeats: Subscription;
  readonly #actions = new Set<Promise<void>>();
  /** Routed counts per model as read at past rounds, oldest first, for arrival rates. */
  readonly #demand: { readonly atMs: number; readonly routed: Map<string, number> }[] = [];
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> = Promise.resolve();

  private constructor(o: AutoscalerOptions, jsm: JetStreamManager) {
    this.#o = o;
    this.#jsm = jsm;
    this.#heartbeats = o.nc.subscribe(heartbeatSubject(o.node), {
      callback: (err, msg) => {
        if (err !== null) return;
        try {
          this.#heard(decodeHeartbeat(msg.data));
        } catch (e) {
          o.logger.warn({ err: e }, "malformed heartbeat ignored");
        }
      },
    });
  }

  static async start(o: AutoscalerOptions): Promise<Autoscaler> {
    const scaler = new Autoscaler(o, await jetstreamManager(o.nc));
    scaler.#timer = setInterval(() => {
      // One round at a time: a slow stream read must not stack rounds up.
      scaler.#round = scaler.#round.then(() => scaler.#tick());
    }, o.syncMs);
    return scaler;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#heartbeats.unsubscribe();
    await this.#round;
    await Promise.all(this.#actions);
  }

  #heard(beat: Heartbeat): void {
    const known = this.#workers.get(beat.worker);
    if (known !== undefined) {
      known.capacityBytes = beat.capacityBytes;
      return;
    }
    // A worker heard for the first time may hold copies already (this autoscaler restarted):
    // they are adopted. Later heartbeats are not trusted for that, since one sent just before
    // an unload would bring back a copy that is gone.
    const w: WorkerState = { capacityBytes: beat.capacityBytes, replicas: new Map(), busy: false };
    this.#workers.set(beat.worker, w);
    for (const m of beat.models) {
      if (m.state === "resident" && this.#o.models.has(m.model)) w.replicas.set(m.model, "ready");
    }
    if (w.replicas.size > 0) this.#publish(beat.worker);
  }

  async #tick(): Promise<void> {
    let lagOf: Map<string, number>;
    let held: Map<string, number>;
    try {
      lagOf = await readSubjectCounts(this.#jsm, ROUTED_STREAM, `${ROUTED_PREFIX}.>`);
      held = await readSubjectCounts(this.#jsm, WORK_STREAM, `${WORK_PREFIX}.>`);
    } catch (err) {
      this.#o.logger.warn({ err }, "autoscaler could not read the queues; skipping a round");
      return;
    }
    const replicaLag = new Map<string, number>();
    for (const [subject, n] of lagOf) {
      const [worker, model] = subject.slice(ROUTED_PREFIX.length + 1).split(".");
      const key = `${worker}/${model}`;
      replicaLag.set(key, (replicaLag.get(key) ?? 0) + n);
    }
    const heldByModel = new Map<string, number>();
    for (const [subject, n] of held) {
      const model = subject.slice(WORK_PREFIX.length + 1).split(".")[0] ?? "";
      heldByModel.set(model, (heldByModel.get(model) ?? 0) + n);
    }
    const nowMs = performance.now();
    const rates = this.#rates(nowMs);
    const models = [...this.#o.models].map(([model, bytes]) => ({
      model,
      bytes,
      held: heldByModel.get(model) ?? 0,
      rate: rates.get(model) ?? 0,
      replicas: [...this.#workers].flatMap(([worker, w]) => {
        const phase = w.replicas.get(model);
        return phase === undefined
          ? []
          : [{ worker, phase, lag: replicaLag.get(`${worker}/${model}`) ?? 0 }];
      }),
    }));
    const workers = [...this.#workers].map(([worker, w]) => ({
      worker,
      capacityBytes: w.capacityBytes,
      usedBytes: [...w.replicas.keys()].reduce((n, m) => n + (this.#o.models.get(m) ?? 0), 0),
      busy: w.busy,
    }));
    const plan = planAutoscale(models, workers, this.#recommendations, nowMs, this.#o.policy);
    for (const action of plan) this.#apply(action);
  }

  /** Items a second routed to each model over the demand window (up to now). */
  #rates(nowMs: number): Map<string, number> {
    const windowMs = this.#o.demandWindowMs ?? 60_000;
    this.#demand.push({ atMs: nowMs, routed: new Map(this.#o.membership.routedPerModel()) });
    while (this.#demand.length > 2 && nowMs - (this.#demand[1]?.atMs ?? nowMs) >= windowMs) {
      this.#demand.shift();
    }
    const oldest = this.#demand[0];
    const rates = new Map<string, number>();
    if (oldest === undefined || nowMs <= oldest.atMs) return rates;
    const seconds = (nowMs - oldest.atMs) / 1000;
    for (const [model, n] of this.#demand[this.#demand.length - 1]?.routed ?? []) {
      rates.set(model, (n - (oldest.routed.get(model) ?? 0)) / seconds);
    }
    return rates;
  }

  #apply(action: AutoscaleAction): void {
    const w = this.#workers.get(action.worker);
    if (w === undefined) return;
    if (action.kind === "drain") {
      w.replicas.set(action.model, "draining");
      this.#publish(action.worker);
      return;
    }
    w.busy = true;
    if (action.kind === "scale-up") w.replicas.set(action.model, "loading");
    const done = this.#control(
      action.worker,
      action.kind === "scale-up" ? "load" : "unload",
      action.model,
    )
      .then((reply) => {
        if (action.kind === "scale-up") {
          if (reply.ok) {
            w.replicas.set(action.model, "ready");
            this.#o.onChange?.("load", action.model);
          } else {
            this.#o.logger.warn({ ...action, reply }, "scale-up failed");
            w.replicas.delete(action.model);
          }
        } else if (reply.ok) {
          w.replicas.delete(action.model);
          this.#o.onChange?.("unload", action.model);
        } else {
          this.#o.logger.warn({ ...action, reply }, "unload failed; the replica stays drained");
        }
        this.#publish(action.worker);
      })
      .finally(() => {
        w.busy = false;
        this.#actions.delete(done);
      });
    this.#actions.add(done);
  }

  /** Tells the router the models `worker` takes new work for: its ready replicas. */
  #publish(worker: string): void {
    const w = this.#workers.get(worker);
    if (w === undefined) return;
    this.#o.membership.serve(
      worker,
      [...w.replicas].filter(([, phase]) => phase === "ready").map(([model]) => model),
    );
  }

  async #control(worker: string, op: "load" | "unload", model: string): Promise<ControlReply> {
    try {
      const msg = await this.#o.nc.request(controlSubject(worker), encodeControl({ op, model }), {
        timeout: this.#o.controlTimeoutMs ?? 600_000,
      });
      return decodeControlReply(msg.data);
    } catch (err) {
      return { ok: false, code: "failed", message: (err as Error).message };
    }
  }
}
