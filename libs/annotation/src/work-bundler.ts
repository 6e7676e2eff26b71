import { randomUUID } from "node:crypto";
import { toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { WorkItemSchema, type WorkItem } from "@shoal/proto";
import { Headers, type StreamPublisher } from "@shoal/jetstream";

/** What one work message may carry, so that it fits one batch and one NATS message. */
export interface BundleLimits {
  readonly maxInputs: number;
  /** `inputs × longest input`, in estimated tokens. */
  readonly maxPaddedTokens: number;
  /** Encoded bytes of the message's items. */
  readonly maxBytes: number;
}

/**
 * Publishes per subject waiting for JetStream's acknowledgement before the next: items that
 * arrive meanwhile join the next message. One keeps the added latency at one store round trip
 * while letting bundles grow with the load.
 */
const IN_FLIGHT_PER_SUBJECT = 1;

/** `WorkBundle.items`: the message is its items' encodings, each written as this field. */
const ITEMS_FIELD = 1;

/** Bytes a field's tag and length prefix add to an item of up to 2 MiB. */
const FIELD_OVERHEAD = 4;

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

/** A message being filled: its items already written as `WorkBundle.items` fields. */
interface Bundle {
  readonly writer: BinaryWriter;
  readonly requestIds: string[];
  readonly waiters: Waiter[];
  bytes: number;
  inputs: number;
  longest: number;
  /** Takes no more items (full, or an item that travels alone). */
  sealed: boolean;
}

interface SubjectQueue {
  readonly bundles: Bundle[];
  inFlight: number;
  scheduled: boolean;
}

/**
 * Queues work items into JetStream, several to a message when several are ready for the same
 * subject at once. A quiet gateway publishes each item at the end of the event-loop turn that
 * queued it; under load, the items that arrive while a subject's previous message is being
 * stored go out together in the next one (up to the limits of a part), so NATS, the worker
 * and the acknowledgement each handle one message for many small requests. The worker batches,
 * answers and acks a message's items together.
 */
export class WorkBundler {
  readonly #publisher: StreamPublisher;
  readonly #limits: BundleLimits;
  readonly #queues = new Map<string, SubjectQueue>();
  /** Dedupe keys are this process's id and a counter: unique per message. */
  readonly #id = randomUUID();
  #sent = 0;

  constructor(publisher: StreamPublisher, limits: BundleLimits) {
    this.#publisher = publisher;
    this.#limits = limits;
  }

  /**
   * Queues `item` on `subject`; resolves once JetStream stored the message that carries it,
   * rejects with the publisher's error (the whole message was refused). `alone` keeps it out
   * of any bundle (a generation item: its worker runs one message at a time).
   */
  queue(subject: string, item: WorkItem, alone = false): Promise<void> {
    const encoded = toBinary(WorkItemSchema, item);
    const inputs = inputCount(item);
    let queue = this.#queues.get(subject);
    if (queue === undefined) {
      queue = { bundles: [], inFlight: 0, scheduled: false };
      this.#queues.set(subject, queue);
    }
    let bundle = queue.bundles.at(-1);
    if (
      bundle === undefined ||
      bundle.sealed ||
      alone ||
      !this.#fits(bundle, encoded, inputs, item)
    ) {
      if (bundle !== undefined) bundle.sealed = true;
      bundle = {
        writer: new BinaryWriter(),
        requestIds: [],
        waiters: [],
        bytes: 0,
        inputs: 0,
        longest: 0,
        sealed: false,
      };
      queue.bundles.push(bundle);
    }
    bundle.writer.tag(ITEMS_FIELD, WireType.LengthDelimited).bytes(encoded);
    bundle.bytes += encoded.length + FIELD_OVERHEAD;
    bundle.inputs += inputs;
    bundle.longest = Math.max(bundle.longest, item.maxInputTokens);
    if (!bundle.requestIds.includes(item.requestId)) bundle.requestIds.push(item.requestId);
    if (alone) bundle.sealed = true;
    const stored = new Promise<void>((resolve, reject) => {
      bundle.waiters.push({ resolve, reject });
    });
    this.#schedule(subject, queue);
    return stored;
  }

  #fits(bundle: Bundle, encoded: Uint8Array, inputs: number, item: WorkItem): boolean {
    const l = this.#limits;
    const n = bundle.inputs + inputs;
    return (
      n <= l.maxInputs &&
      n * Math.max(bundle.longest, item.maxInputTokens) <= l.maxPaddedTokens &&
      bundle.bytes + encoded.length + FIELD_OVERHEAD <= l.maxBytes
    );
  }

  /** Publishes at the end of this turn, so the items of requests read together go together. */
  #schedule(subject: string, queue: SubjectQueue): void {
    if (queue.scheduled || queue.inFlight >= IN_FLIGHT_PER_SUBJECT) return;
    queue.scheduled = true;
    setImmediate(() => {
      queue.scheduled = false;
      this.#drain(subject, queue);
    });
  }

  #drain(subject: string, queue: SubjectQueue): void {
    while (queue.inFlight < IN_FLIGHT_PER_SUBJECT) {
      const bundle = queue.bundles.shift();
      if (bundle === undefined) return;
      bundle.sealed = true;
      queue.inFlight++;
      const settle = (err?: Error): void => {
        queue.inFlight--;
        for (const w of bundle.waiters) {
          if (err === undefined) w.resolve();
          else w.reject(err);
        }
        // What arrived while this message was being stored goes now, together.
        this.#drain(subject, queue);
      };
      this.#publish(subject, bundle).then(
        () => {
          settle();
        },
        (err: unknown) => {
          settle(err as Error);
        },
      );
    }
  }

  async #publish(subject: string, bundle: Bundle): Promise<void> {
    const hdrs = natsHeaders();
    for (const id of bundle.requestIds) hdrs.append(Headers.requestId, id);
    const data = bundle.writer.finish();
    await this.#publisher.publish(subject, data, `${this.#id}:${this.#sent++}`, hdrs);
  }
}

/** Inputs (or documents) an item carries: what a batch's input slots count. */
function inputCount(item: WorkItem): number {
  switch (item.task.case) {
    case "embed":
    case "classify":
    case "extract":
      return Math.max(1, item.task.value.inputs.length);
    case "score":
      return Math.max(1, item.task.value.documents.length);
    default:
      return 1;
  }
}
