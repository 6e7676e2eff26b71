/**
 * The load generator's MessagePack client: `@shoal/client`, the TypeScript client Shoal ships,
 * on the REST routes with MessagePack bodies (embeddings come back as raw float32 rows). It
 * does not retry: a refused request is a failure the knee should see. It serves embeddings
 * only, as the client does.
 */
import { ShoalClient } from "@shoal/client";
import type { PlannedRequest, SentAnswer } from "@shoal/loadgen";
import { textOfTokens } from "./text.js";

export function msgpackSender(baseUrl: string) {
  // The client bounds each call by its own timeout rather than the step's abort signal.
  const client = new ShoalClient({ baseUrl, maxRetries: 0, timeoutMs: 30_000 });
  return async (request: PlannedRequest): Promise<SentAnswer> => {
    if (request.function !== "embed") {
      throw new Error("the MessagePack target sends embeddings only");
    }
    const tag = `${request.model}.${request.atMs.toFixed(3)}`;
    const res = await client.embed({
      model: request.model,
      input: request.inputTokens.map((t, i) => textOfTokens(t, `${tag}.${i}`)),
    });
    return { tokens: res.usage.promptTokens };
  };
}
