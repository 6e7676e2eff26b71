/**
 * The sidecar's own tokens/s on the workload's inputs, measured through the same sidecar the
 * cluster used, with the cluster idle: the workload's inputs sorted by length (the least padding
 * any batching could reach), packed to a padded-token budget, and sent back to back, `inFlight`
 * batches at a time (more than one keeps a GPU busy while the next batch is tokenized and
 * sent). The cluster's tokens/s at the knee over this is the share of the accelerator's raw
 * speed the whole cluster delivers.
 */
import type { PlannedRequest } from "@shoal/loadgen";
import type { SidecarClient } from "@shoal/sidecar-client";
import { textOfTokens } from "./targets/text.js";

export interface RawThroughput {
  readonly budget_padded_tokens: number;
  readonly in_flight: number;
  readonly batches: number;
  readonly tokens_per_s: number;
}

export async function rawEmbedThroughput(
  sidecar: SidecarClient,
  model: string,
  requests: readonly PlannedRequest[],
  budgetPaddedTokens: number,
  seconds: number,
  inFlight = 1,
): Promise<RawThroughput> {
  const lengths = requests.flatMap((r) => r.inputTokens).sort((a, b) => a - b);
  const batches: string[][] = [];
  let batch: string[] = [];
  let longest = 0;
  for (const [i, tokens] of lengths.entries()) {
    if (batch.length > 0 && Math.max(longest, tokens) * (batch.length + 1) > budgetPaddedTokens) {
      batches.push(batch);
      batch = [];
      longest = 0;
    }
    longest = Math.max(longest, tokens);
    batch.push(textOfTokens(tokens, `raw.${i}`));
  }
  if (batch.length > 0) batches.push(batch);
  let tokens = 0;
  let sent = 0;
  const started = performance.now();
  const sender = async (): Promise<void> => {
    while (performance.now() - started < seconds * 1000) {
      const inputs = batches[sent++ % batches.length] as string[];
      const r = await sidecar.embed({ model, inputs });
      tokens += r.tokens.reduce((a, b) => a + b, 0);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, sender));
  return {
    budget_padded_tokens: budgetPaddedTokens,
    in_flight: inFlight,
    batches: sent,
    tokens_per_s: tokens / ((performance.now() - started) / 1000),
  };
}
