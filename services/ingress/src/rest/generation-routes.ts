import type { Tracer } from "@opentelemetry/api";
import { type GenerationFinish, type StartedGeneration, type StreamGateway } from "@shoal/gateway";
import { httpHeaderCarrier, type Logger } from "@shoal/telemetry";
import type { Principal } from "@shoal/tenants";
import { asRequestError, protocolError } from "../error-table.js";
import { traced } from "../traced.js";
import { readRequest, type HttpRequest } from "./body.js";
import {
  chunkBody,
  completionBody,
  usageChunk,
  UsageCounter,
  type GenerateApi,
  type ResponseHead,
} from "./openai-generate-response.js";
import {
  parseChatRequest,
  parseCompletionRequest,
  type OpenAIGenerateRequest,
} from "./openai-generate-request.js";
import { sendBody, type HttpResponse } from "./respond.js";
import { SseWriter } from "./sse.js";
import { NO_WAIT_HEADER, wantsNoWait } from "../no-wait-header.js";
import type { IngressMetrics } from "../metrics.js";

export interface GenerationRouteContext {
  readonly streams: StreamGateway;
  readonly tracer: Tracer;
  readonly metrics?: IngressMetrics | undefined;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
}

/** `POST /v1/chat/completions`. */
export function chatCompletions(
  req: HttpRequest,
  res: HttpResponse,
  rc: GenerationRouteContext,
  caller: Principal | undefined,
): Promise<void> {
  return generate("chat", req, res, rc, caller);
}

/** `POST /v1/completions`. */
export function completions(
  req: HttpRequest,
  res: HttpResponse,
  rc: GenerationRouteContext,
  caller: Principal | undefined,
): Promise<void> {
  return generate("completion", req, res, rc, caller);
}

async function generate(
  api: GenerateApi,
  req: HttpRequest,
  res: HttpResponse,
  rc: GenerationRouteContext,
  caller: Principal | undefined,
): Promise<void> {
  const raw = await readRequest(req, rc.maxBodyBytes);
  const request = api === "chat" ? parseChatRequest(raw) : parseCompletionRequest(raw);
  const route = api === "chat" ? "/v1/chat/completions" : "/v1/completions";
  await traced(
    rc,
    api === "chat" ? "ingress.chat_completions" : "ingress.completions",
    httpHeaderCarrier(req.headers),
    {
      "http.route": route,
      "shoal.model": request.call.model,
      "shoal.stream": String(request.stream),
    },
    async (ctx) => {
      // Errors up to the first event (validation, overload, prompt too long) throw here and
      // become a plain OpenAI error response.
      // A client that leaves stops the generation, queued or running, on the worker and in
      // the sidecar.
      const gone = new AbortController();
      res.once("close", () => {
        gone.abort();
      });
      const started = await rc.streams.generate(
        { ...request.call, noWait: wantsNoWait(req.headers[NO_WAIT_HEADER]), caller },
        ctx,
        gone.signal,
      );
      const head: ResponseHead = {
        id: `${api === "chat" ? "chatcmpl" : "cmpl"}-${started.requestId}`,
        created: Math.floor(Date.now() / 1000),
        // As asked: a catalog id, or `base:adapter[@version]`.
        model: request.call.model,
      };
      if (request.stream) await streamed(api, head, started, request, res, rc);
      else await whole(api, head, started, res);
    },
  );
}

async function whole(
  api: GenerateApi,
  head: ResponseHead,
  started: StartedGeneration,
  res: HttpResponse,
): Promise<void> {
  const choices = Array.from({ length: started.n }, () => ({
    text: "",
    finish: "stop" as GenerationFinish,
  }));
  const usage = new UsageCounter();
  for await (const event of started.stream) {
    const choice = choices[event.index];
    if (choice === undefined) continue;
    if (event.kind === "tokens") choice.text += event.text;
    else {
      choice.finish = event.finishReason;
      usage.add(event);
    }
  }
  // The client left mid-generation: there is nobody to answer.
  if (res.destroyed) return;
  sendBody(res, 200, completionBody(api, head, choices, usage.usage), {
    "x-request-id": started.requestId,
  });
}

async function streamed(
  api: GenerateApi,
  head: ResponseHead,
  started: StartedGeneration,
  request: OpenAIGenerateRequest,
  res: HttpResponse,
  rc: GenerationRouteContext,
): Promise<void> {
  const sse = new SseWriter(res, { "x-request-id": started.requestId });
  const usage = new UsageCounter();
  const send = (body: unknown): Promise<void> => sse.send(JSON.stringify(body));
  try {
    if (api === "chat") {
      for (let index = 0; index < started.n; index++) {
        await send(chunkBody(api, head, { index, role: true, text: "" }, request.includeUsage));
      }
    }
    for await (const event of started.stream) {
      if (sse.closed) break;
      if (event.kind === "tokens") {
        await send(
          chunkBody(api, head, { index: event.index, text: event.text }, request.includeUsage),
        );
      } else {
        usage.add(event);
        await send(
          chunkBody(
            api,
            head,
            { index: event.index, finish: event.finishReason },
            request.includeUsage,
          ),
        );
      }
    }
    if (request.includeUsage) await send(usageChunk(api, head, usage.usage));
    await sse.send("[DONE]");
  } catch (err) {
    // The stream already started with 200: the error travels as an event, in OpenAI's shape,
    // which the SDKs raise as an APIError.
    const error = asRequestError(err);
    if (error.kind === "internal") rc.logger.error({ err }, "generation failed midway");
    await send({
      error: {
        message: error.message,
        type: protocolError(error).openaiType,
        param: null,
        code: error.kind,
      },
    });
  } finally {
    sse.end();
  }
}
