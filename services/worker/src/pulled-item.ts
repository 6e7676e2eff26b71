import { fromBinary } from "@bufbuild/protobuf";
import type { Context } from "@opentelemetry/api";
import type { BatchCandidate } from "@shoal/batching";
import type { WorkMessage } from "@shoal/jetstream";
import { WorkBundleSchema, type WorkItem } from "@shoal/proto";
import { extractContext, traceFieldsCarrier, wallClockUs } from "@shoal/telemetry";

/** One work item of a pulled message, decoded, with what its answer and its trace need. */
export interface PulledItem {
  readonly item: WorkItem;
  /** Its texts; empty when its inputs are token ids. */
  readonly inputTexts: readonly string[];
  /** Its inputs as token ids (embed items that were sent ids), in place of texts. */
  readonly tokenIds?: readonly (readonly number[])[] | undefined;
  /** Rows it adds to a batch: one per text or token-id input. */
  readonly inputs: number;
  /** The query every text is scored against (rerank items only). */
  readonly query?: string | undefined;
  /** Whether the client accepts truncation (false: an over-long input is an error). */
  readonly truncate: boolean;
  /** The trace context the gateway queued the item under. */
  readonly parent: Context;
  /** Wall clock when the worker received its message, Unix µs. */
  readonly pulledAtUs: number;
  /** Deliveries of its message so far, this one included. */
  readonly delivery: number;
}

/**
 * A pulled work message (a `WorkBundle` of one or more items): the unit batches are formed
 * from, put back, retried, dead-lettered and acked. Its items always run in the same batch,
 * so the message is acked once, after all of them are answered.
 */
export interface PulledMessage extends BatchCandidate {
  readonly msg: WorkMessage;
  readonly items: readonly PulledItem[];
}

let arrivals = 0;

/**
 * Decodes a pulled message; undefined when it is not a `WorkBundle` of items this puller runs
 * (poison). Its deadline is its items' latest, so the message expires only when all of them
 * have; an item whose own deadline passed is answered as expired when the batch runs.
 */
export function decodePulled(msg: WorkMessage): PulledMessage | undefined {
  let bundle;
  try {
    bundle = fromBinary(WorkBundleSchema, msg.data);
  } catch {
    return undefined;
  }
  if (bundle.items.length === 0) return undefined;
  const pulledAtUs = wallClockUs();
  const items: PulledItem[] = [];
  for (const item of bundle.items) {
    const task = taskTexts(item);
    const rows = task?.tokenIds?.length ?? task?.texts.length ?? 0;
    if (task === undefined || rows === 0) return undefined;
    items.push({
      item,
      inputTexts: task.texts,
      tokenIds: task.tokenIds,
      inputs: rows,
      query: task.query,
      truncate: task.truncate,
      parent: extractContext(traceFieldsCarrier(item)),
      pulledAtUs,
      delivery: msg.deliveryCount,
    });
  }
  let deadline = 0;
  for (const { item } of items) {
    const d = Number(item.deadlineUnixMs);
    // One item without a deadline keeps the whole message alive.
    if (d === 0) {
      deadline = 0;
      break;
    }
    deadline = Math.max(deadline, d);
  }
  return {
    msg,
    items,
    inputs: items.reduce((n, p) => n + p.inputs, 0),
    maxInputTokens: Math.max(...items.map((p) => p.item.maxInputTokens)),
    totalTokens: items.reduce((n, p) => n + p.item.totalTokens, 0),
    priority: Math.max(...items.map((p) => p.item.priority)),
    deadlineUnixMs: deadline,
    arrival: arrivals++,
  };
}

/**
 * The texts (or, for embed items sent them, token ids) a work item carries for the sidecar,
 * whatever its kind; undefined for none.
 */
export function taskTexts(
  item: WorkItem,
): { texts: string[]; tokenIds?: number[][]; query?: string; truncate: boolean } | undefined {
  switch (item.task.case) {
    case "embed": {
      const { inputs, tokenInputs, truncate } = item.task.value;
      return tokenInputs.length > 0
        ? { texts: [], tokenIds: tokenInputs.map((t) => t.ids), truncate }
        : { texts: inputs, truncate };
    }
    case "classify":
    case "extract":
      return { texts: item.task.value.inputs, truncate: item.task.value.truncate };
    case "score":
      return {
        texts: item.task.value.documents,
        query: item.task.value.query,
        truncate: item.task.value.truncate,
      };
    default:
      return undefined;
  }
}
