import type { Http2ServerRequest, Http2ServerResponse, OutgoingHttpHeaders } from "node:http2";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { Tracer } from "@opentelemetry/api";
import { InvalidArgumentError, PayloadTooLargeError, type Gateway } from "@shoal/gateway";
import { EmbedRequestSchema, EmbedResponseSchema, InferenceService } from "@shoal/proto";
import type { Logger } from "@shoal/telemetry";
import { callOptions } from "../connect/call-options.js";
import { embedResponse } from "../connect/embed-response.js";
import { asRequestError, protocolError } from "../error-table.js";
import { serverTiming } from "../server-timing.js";
import { countRefused, traced } from "../traced.js";
import { ENVELOPE_BYTES, envelope, grpcMessage, grpcTimeoutMs, unaryMessage } from "./wire.js";
import type { IngressMetrics } from "../metrics.js";
import type { EdgeAuth } from "../edge-auth.js";

export interface GrpcEmbedContext {
  readonly gateway: Gateway;
  readonly tracer: Tracer;
  readonly metrics?: IngressMetrics | undefined;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly auth: EdgeAuth;
}

const EMBED_PATH = `/${InferenceService.typeName}/${InferenceService.method.embed.name}`;
const GRPC_TYPES = new Set(["application/grpc", "application/grpc+proto"]);

/**
 * Whether a request is a plain gRPC `Embed` call, which `serveGrpcEmbed` answers itself: HTTP/2,
 * binary protobuf, no compression. Every other call (Connect, gRPC-Web, JSON, compressed
 * messages, every other method) goes through the Connect adapter as before.
 */
export function isGrpcEmbed(req: Http2ServerRequest): boolean {
  const encoding = req.headers["grpc-encoding"];
  return (
    req.method === "POST" &&
    req.url === EMBED_PATH &&
    GRPC_TYPES.has(req.headers["content-type"] ?? "") &&
    (encoding === undefined || encoding === "identity")
  );
}

/**
 * Unary gRPC `Embed` on Node's HTTP/2 stream, without the Connect adapter's generic machinery
 * (async iterables, abort signals, header objects per call), which cost the gRPC path four
 * times the REST path's CPU per request in the overhead bench. Behaviour is the adapter's:
 * the same gateway call, deadline from `grpc-timeout`, error statuses from the one error
 * table, `server-timing` and `x-request-id` headers, and the same response bytes.
 */
export async function serveGrpcEmbed(
  req: Http2ServerRequest,
  res: Http2ServerResponse,
  gc: GrpcEmbedContext,
): Promise<void> {
  try {
    const caller = gc.auth.principal(header(req, "authorization"), EMBED_PATH);
    const timeoutMs = grpcTimeoutMs(header(req, "grpc-timeout"));
    if (timeoutMs === "malformed") throw new InvalidArgumentError("malformed grpc-timeout");
    const body = await readBody(req, gc.maxBodyBytes + ENVELOPE_BYTES);
    const unary = unaryMessage(body);
    if ("error" in unary) throw new InvalidArgumentError(unary.error);
    let request;
    try {
      request = fromBinary(EmbedRequestSchema, unary.message);
    } catch (cause) {
      throw new InvalidArgumentError("request is not a valid EmbedRequest", { cause });
    }
    const outcome = await traced(
      gc,
      "ingress.Embed",
      { get: (name) => header(req, name), set: () => undefined },
      {
        "rpc.method": "Embed",
        "shoal.model": request.model,
        "shoal.inputs": request.inputs.length,
      },
      (ctx) =>
        gc.gateway.embed(
          {
            model: request.model,
            inputs: request.inputs,
            promptName: request.promptName,
            ...callOptions(request, { timeoutMs, header: (name) => header(req, name), caller }),
          },
          ctx,
        ),
    );
    const message = envelope(toBinary(EmbedResponseSchema, embedResponse(outcome, true)));
    respond(
      res,
      {
        "server-timing": serverTiming(outcome.timings),
        "x-request-id": outcome.requestId,
      },
      message,
    );
  } catch (err) {
    countRefused(gc, "Embed", err);
    const error = asRequestError(err);
    if (error.kind === "internal") gc.logger.error({ err }, "Embed failed");
    const code: Code = protocolError(error).connect;
    respond(res, { "grpc-status": String(code), "grpc-message": grpcMessage(error.message) });
    // Whatever the client still sends of a refused body is read and dropped.
    req.resume();
  }
}

/** Headers, then the message and `grpc-status: 0` as trailers; or trailers-only for an error. */
function respond(res: Http2ServerResponse, headers: OutgoingHttpHeaders, message?: Buffer): void {
  const stream = res.stream;
  // A client that cancelled or went away has nobody left to answer.
  if (stream.destroyed || stream.closed) return;
  const head = { "content-type": "application/grpc", ...headers };
  if (message === undefined) {
    stream.respond({ ":status": 200, ...head }, { endStream: true });
    return;
  }
  // Through the compatibility response, which owns the stream's end: it sends the trailers
  // after the last DATA frame however many flow-control windows the message takes.
  res.writeHead(200, head);
  res.addTrailers({ "grpc-status": "0" });
  res.end(message);
}

function header(req: Http2ServerRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The whole request body, refused once it passes `limit` bytes. */
function readBody(req: Http2ServerRequest, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.off("data", onData);
        reject(new PayloadTooLargeError(limit - ENVELOPE_BYTES));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => {
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    });
    req.once("error", reject);
  });
}
