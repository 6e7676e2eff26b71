/**
 * The load generator's REST client: the ingress's OpenAI-compatible routes, over plain
 * `fetch`, as an OpenAI SDK user would reach them. Embeddings go to `/v1/embeddings`;
 * generations to `/v1/completions`, streamed as server-sent events when the plan says so (the
 * request then counts as answered at the last event, with usage from the final chunk). Each
 * answer's `Server-Timing` phases (annotate, queue, batch, compute) come back with it.
 */
import { parseServerTiming, type PlannedRequest, type SentAnswer } from "@shoal/loadgen";
import { textOfTokens } from "./text.js";

export function restSender(baseUrl: string) {
  return async (request: PlannedRequest, signal: AbortSignal): Promise<SentAnswer> => {
    const tag = `${request.model}.${request.atMs.toFixed(3)}`;
    if (request.function === "embed") {
      const { body, phasesMs } = await post(baseUrl, "/v1/embeddings", signal, {
        model: request.model,
        input: request.inputTokens.map((t, i) => textOfTokens(t, `${tag}.${i}`)),
      });
      const usage = (body as { usage: { prompt_tokens: number } }).usage;
      return { tokens: usage.prompt_tokens, phasesMs };
    }
    const fields = {
      model: request.model,
      prompt: textOfTokens(request.inputTokens[0] ?? 1, tag),
      max_tokens: request.maxTokens,
      temperature: 0,
    };
    if (!request.stream) {
      const { body, phasesMs } = await post(baseUrl, "/v1/completions", signal, fields);
      const usage = (body as { usage: { completion_tokens: number } }).usage;
      return { tokens: usage.completion_tokens, phasesMs };
    }
    const response = await fetch(`${baseUrl}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...fields, stream: true, stream_options: { include_usage: true } }),
      signal,
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    const text = await response.text();
    const usage = /"completion_tokens":(\d+)/.exec(text.slice(text.lastIndexOf("data: {")));
    if (!text.includes("data: [DONE]") || usage === null) {
      throw new Error("stream ended without [DONE] and usage");
    }
    return { tokens: Number(usage[1]) };
  };
}

async function post(
  baseUrl: string,
  path: string,
  signal: AbortSignal,
  body: unknown,
): Promise<{ body: unknown; phasesMs: Record<string, number> }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  return {
    body: await response.json(),
    phasesMs: parseServerTiming(response.headers.get("server-timing")),
  };
}
