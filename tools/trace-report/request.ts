import type { Trace } from "@shoal/traces";
import { breakdown, type Breakdown } from "./phases.js";

/** One request's trace, as the report reads it. */
export interface RequestRecord extends Breakdown {
  readonly traceId: string;
  /** The ingress span's name without its prefix: embeddings, chat, rerank… */
  readonly route: string;
  /** The model the client named (the ingress span's `shoal.model`). */
  readonly model: string;
  readonly startUs: number;
  readonly error: boolean;
  /** Inputs in the largest batch the request ran in; undefined for generations. */
  readonly batchItems?: number | undefined;
  /** Whether the request waited for its model to be loaded. */
  readonly waitedForLoad: boolean;
}

/**
 * The request a trace records, when it is one: its root is an ingress span. Traces of model
 * loads, registry calls and the like are not requests and are left out.
 */
export function requestOf(trace: Trace): RequestRecord | undefined {
  const root = trace.root;
  if (!root.name.startsWith("ingress.")) return undefined;
  const batches = trace
    .named("worker.batch")
    .map((s) => s.attributes["shoal.batch_items"])
    .filter((n): n is number => typeof n === "number");
  const model = root.attributes["shoal.model"];
  return {
    traceId: trace.traceId,
    route: root.name.slice("ingress.".length),
    model: typeof model === "string" && model !== "" ? model : "unknown",
    startUs: root.startUs,
    error: trace.spans.some((s) => s.error),
    batchItems: batches.length === 0 ? undefined : Math.max(...batches),
    waitedForLoad: trace.named("model.load").length > 0,
    ...breakdown(trace),
  };
}
