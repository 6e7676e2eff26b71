import { readFile } from "node:fs/promises";
import {
  groupTraces,
  JaegerQuery,
  spansFromOtlpJson,
  type OtlpTracesJson,
  type Trace,
  type TraceSpan,
} from "@shoal/traces";
import type { Window } from "./window.js";

/** Where traces are read from: the trace backend's query API, or exported OTLP/JSON files. */
export type TraceSource =
  | { readonly kind: "jaeger"; readonly url: string; readonly limit: number }
  | { readonly kind: "file"; readonly path: string };

/** The service whose spans root every request trace. */
const EDGE_SERVICE = "shoal-ingress";

/**
 * The traces that started within `window`. A file holds one OTLP/JSON document (as Jaeger's
 * API returns it, under `result`, or as exporters send it) or one per line (the OpenTelemetry
 * Collector's file exporter).
 */
export async function readTraces(source: TraceSource, window: Window): Promise<Trace[]> {
  const spans =
    source.kind === "jaeger"
      ? await new JaegerQuery(source.url).find({
          service: EDGE_SERVICE,
          from: window.from,
          to: window.to,
          limit: source.limit,
        })
      : await spansFromFile(source.path);
  const fromUs = window.from.getTime() * 1000;
  const toUs = window.to.getTime() * 1000;
  return groupTraces(spans).filter((t) => t.root.startUs >= fromUs && t.root.startUs <= toUs);
}

async function spansFromFile(path: string): Promise<TraceSpan[]> {
  const text = await readFile(path, "utf8");
  let documents: unknown[];
  try {
    documents = [JSON.parse(text)];
  } catch {
    documents = text
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as unknown);
  }
  return documents.flatMap((d) => {
    const body = d as OtlpTracesJson & { result?: OtlpTracesJson };
    return spansFromOtlpJson(body.result ?? body);
  });
}
