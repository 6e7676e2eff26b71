/**
 * The load generator's gRPC client: the ingress's `shoal.inference.v1.InferenceService` over
 * HTTP/2 (Connect's gRPC transport), as a polyglot gRPC stub reaches it. Embeddings are one
 * unary `Embed`; generations a server-streamed `Generate`, answered at its last message with
 * the usage it carries. The response's `server-timing` header gives the phases.
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { parseServerTiming, type PlannedRequest, type SentAnswer } from "@shoal/loadgen";
import { InferenceService } from "@shoal/proto";
import { textOfTokens } from "./text.js";

export function grpcSender(baseUrl: string) {
  const rpc = createClient(InferenceService, createGrpcTransport({ baseUrl }));
  return async (request: PlannedRequest, signal: AbortSignal): Promise<SentAnswer> => {
    const tag = `${request.model}.${request.atMs.toFixed(3)}`;
    let phasesMs: Record<string, number> = {};
    const onHeader = (headers: Headers): void => {
      phasesMs = parseServerTiming(headers.get("server-timing"));
    };
    if (request.function === "embed") {
      const res = await rpc.embed(
        {
          model: request.model,
          inputs: request.inputTokens.map((t, i) => textOfTokens(t, `${tag}.${i}`)),
        },
        { signal, onHeader },
      );
      return { tokens: res.usage?.inputTokens ?? 0, phasesMs };
    }
    let tokens: number | undefined;
    for await (const message of rpc.generate(
      {
        model: request.model,
        input: { case: "prompt", value: textOfTokens(request.inputTokens[0] ?? 1, tag) },
        sampling: { maxTokens: request.maxTokens, temperature: 0 },
      },
      { signal, onHeader },
    )) {
      if (message.usage !== undefined) tokens = message.usage.outputTokens;
    }
    if (tokens === undefined) throw new Error("Generate stream ended without usage");
    return { tokens, phasesMs };
  };
}
