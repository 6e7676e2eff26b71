import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import { encode } from "@msgpack/msgpack";
import type { RequestError } from "@shoal/gateway";
import { protocolError } from "../error-table.js";
import { isMsgpack, MSGPACK_MEDIA_TYPE, type BodyFormat } from "./body.js";
import { jsonWithFloats } from "./json-floats.js";

export type HttpResponse = ServerResponse | Http2ServerResponse;

/**
 * The format an answer goes out in: MessagePack when the request's `Accept` lists a
 * MessagePack type, JSON otherwise (OpenAI clients send no Accept, or `application/json`).
 */
export function responseFormat(res: HttpResponse): BodyFormat {
  const accept = res.req.headers.accept ?? "";
  return accept.split(",").some((type) => isMsgpack(type)) ? "msgpack" : "json";
}

/**
 * Sends `body` as JSON or MessagePack, whichever the request accepts. In MessagePack,
 * `Uint8Array` values (embeddings) go out as `bin`: raw bytes, no text encoding.
 */
export function sendBody(
  res: HttpResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const msgpack = responseFormat(res) === "msgpack";
  const payload = msgpack ? encode(body) : jsonWithFloats(body);
  res.writeHead(status, {
    "content-type": msgpack ? MSGPACK_MEDIA_TYPE : "application/json",
    "content-length": payload.byteLength.toString(),
    vary: "accept",
    ...headers,
  });
  res.end(payload);
}

/** An error in OpenAI's shape, with `Retry-After` when the client should come back later. */
export function sendError(res: HttpResponse, err: RequestError): void {
  const mapped = protocolError(err);
  const headers: Record<string, string> = {};
  if ("retryAfterSeconds" in err && typeof err.retryAfterSeconds === "number") {
    headers["retry-after"] = String(err.retryAfterSeconds);
  }
  if (err.kind === "unauthenticated") headers["www-authenticate"] = 'Bearer realm="shoal"';
  sendBody(
    res,
    mapped.http,
    { error: { message: err.message, type: mapped.openaiType, param: null, code: err.kind } },
    headers,
  );
}
