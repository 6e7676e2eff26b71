/**
 * Steady embedding load against ingresses, for the multi-host test: runs inside the lab's
 * client host, where the cluster's addresses are reachable.
 *
 *   steady-load.ts --targets http://10.77.0.14:8080,http://10.77.0.15:8080 --rate 20 --out F
 *
 * First it embeds each of its texts until it has a reference vector for each, then prints
 * "ready" and starts one request every 1/rate seconds, round robin over the targets, until
 * SIGTERM; then it waits for the requests still open and exits. Each finished request is one
 * JSON line in F (see {@link LoadRecord}). Like a load balancer, it sends a request that could
 * not be delivered (connection refused or reset before any answer: an ingress stopping) to
 * the next target; any answer, error or not, is final.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { LoadRecord } from "./load-record.js";

const { values } = parseArgs({
  options: {
    targets: { type: "string" },
    rate: { type: "string", default: "20" },
    out: { type: "string" },
    texts: { type: "string", default: "16" },
    model: { type: "string", default: "sentence-transformers/all-MiniLM-L6-v2" },
  },
});
if (values.targets === undefined || values.out === undefined) {
  console.error("usage: steady-load.ts --targets URL[,URL…] --out FILE [--rate N] [--texts N]");
  process.exit(2);
}
const targets = values.targets.split(",");
const out = values.out;
const rate = Number(values.rate);
const texts = Array.from(
  { length: Number(values.texts) },
  (_, k) => `multi-host probe ${k}: the fleet keeps answering while hosts fail`,
);
const REQUEST_TIMEOUT_MS = 60_000;
const MAX_DELIVERY_ATTEMPTS = 40;

let next = 0;
async function embed(text: string): Promise<{ status: number; body: string; attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    const target = targets[next++ % targets.length] ?? "";
    try {
      const res = await fetch(`${target}/v1/embeddings`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: values.model, input: [text] }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      return { status: res.status, body: await res.text(), attempts: attempt };
    } catch (err) {
      // Not delivered, or no answer at all: try the next ingress, as a balancer would. A
      // timeout is an answer that never came, and final.
      if ((err as Error).name === "TimeoutError" || attempt >= MAX_DELIVERY_ATTEMPTS) {
        return { status: 0, body: String(err), attempts: attempt };
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function vectorOf(body: string): number[] | undefined {
  try {
    return (JSON.parse(body) as { data: { embedding: number[] }[] }).data[0]?.embedding;
  } catch {
    return undefined;
  }
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

const references: number[][] = [];
for (const text of texts) {
  for (;;) {
    const answer = await embed(text);
    const vector = answer.status === 200 ? vectorOf(answer.body) : undefined;
    if (vector !== undefined) {
      references.push(vector);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
writeFileSync(out, "");
console.log("ready");

const run = { stopping: false };
process.once("SIGTERM", () => (run.stopping = true));
const open = new Set<Promise<void>>();
const started = Date.now();
for (let seq = 0; !run.stopping; seq++) {
  const k = seq % texts.length;
  const startMs = Date.now();
  const request = embed(texts[k] ?? "").then((answer) => {
    const vector = answer.status === 200 ? vectorOf(answer.body) : undefined;
    const record: LoadRecord = {
      seq,
      startMs,
      endMs: Date.now(),
      status: answer.status,
      attempts: answer.attempts,
      ...(vector === undefined ? {} : { cosine: cosine(vector, references[k] ?? []) }),
      ...(answer.status === 200 ? {} : { error: answer.body.slice(0, 300) }),
    };
    appendFileSync(out, `${JSON.stringify(record)}\n`);
  });
  open.add(request);
  void request.finally(() => open.delete(request));
  // Paced from the start, so a slow answer never slows the arrivals.
  const due = started + ((seq + 1) * 1000) / rate;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
}
await Promise.all(open);
console.log("done");
