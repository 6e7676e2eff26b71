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
  /** The query every text is scored against (rerank items only). */
  readonly query?: string | undefined;
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
  const task = taskTexts(item);
  if (task === undefined || task.texts.length === 0) return undefined;
  const inputs = task.texts;
  return {
    msg,
    item,
    inputTexts: inputs,
    query: task.query,
    truncate: task.truncate,
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

/** The texts a work item carries for the sidecar, whatever its kind; undefined for none. */
export function taskTexts(
  item: WorkItem,
): { texts: string[]; query?: string; truncate: boolean } | undefined {
  switch (item.task.case) {
    case "embed":
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
