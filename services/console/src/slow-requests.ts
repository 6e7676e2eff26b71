import { durationUs, groupTraces, type JaegerQuery } from "@shoal/traces";
import type { SlowRequest } from "./snapshot.js";

/** Traces read per query, and the slowest kept. */
const TRACES_READ = 200;
const SLOWEST = 5;

/**
 * The slowest requests traced through ingress in the last `windowMs`, each linked to its trace
 * in the backend's UI (`<uiUrl>/trace/<id>`). Only sampled requests are traced (one in a
 * hundred by default), so these are the slowest of the sample.
 */
export async function slowRequests(
  query: JaegerQuery,
  uiUrl: string,
  windowMs: number,
  nowMs: number,
): Promise<SlowRequest[]> {
  const spans = await query.find({
    service: "shoal-ingress",
    from: new Date(nowMs - windowMs),
    to: new Date(nowMs),
    limit: TRACES_READ,
  });
  const base = uiUrl.replace(/\/+$/, "");
  return (
    groupTraces(spans)
      // Rooted at ingress's request span (`ingress.<route>`, a server span; its parent, if any,
      // is the client's). A trace whose request span has not been exported yet (the request
      // is still running, or its batch is on its way) is left out: its root would be a part.
      .filter((t) => t.root.service === "shoal-ingress" && t.root.name.startsWith("ingress."))
      .map((t) => ({
        traceId: t.traceId,
        name: t.root.name,
        durationMs: durationUs(t.root) / 1000,
        at: t.root.startUs / 1000,
        url: `${base}/trace/${t.traceId}`,
      }))
      .sort((a, b) => b.durationMs - a.durationMs)
      .slice(0, SLOWEST)
  );
}
