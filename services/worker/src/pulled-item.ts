import { fromBinary } from "@bufbuild/protobuf";
import type { Context } from "@opentelemetry/api";
import type { BatchCandidate } from "@shoal/batching";
import type { WorkMessage } from "@shoal/jetstream";
import { WorkItemSchema, type WorkItem } from "@shoal/proto";
import { extractContext, natsHeaderCarrier, wallClockUs } from "@shoal/telemetry";

/** One pulled work item, decoded, with what batch formation and tracing need. */
export interface PulledItem extends BatchCandidate {
  readonly msg: WorkMessage;
  readonly item: WorkItem;
  readonly inputTexts: readonly string[];
  /** Whether the client accepts truncation (false: an over-long input is an error). */
  readonly truncate: boolean;
  /** The trace context the annotator published the item under. */
  readonly parent: Context;
  /** Wall clock when the worker received it, Unix µs. */
  readonly pulledAtUs: number;
}

let arrivals = 0;

/** Decodes a pulled message; undefined when it is not a WorkItem (poison). */
export function decodePulled(msg: WorkMessage): PulledItem | undefined {
  let item: WorkItem;
  try {
    item = fromBinary(WorkItemSchema, msg.data);
  } catch {
    return undefined;
  }
  if (item.task.case !== "embed" || item.task.value.inputs.length === 0) return undefined;
  const inputs = item.task.value.inputs;
  return {
    msg,
    item,
    inputTexts: inputs,
    truncate: item.task.value.truncate,
    parent: extractContext(natsHeaderCarrier(msg.headers)),
    pulledAtUs: wallClockUs(),
    inputs: inputs.length,
    maxInputTokens: item.maxInputTokens,
    totalTokens: item.totalTokens,
    priority: item.priority,
    deadlineUnixMs: Number(item.deadlineUnixMs),
    arrival: arrivals++,
  };
}
