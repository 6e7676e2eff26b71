import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { RequestError } from "@shoal/gateway";
import { protocolError } from "../error-table.js";

export type HttpResponse = ServerResponse | Http2ServerResponse;

export function sendJson(
  res: HttpResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload).toString(),
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
  sendJson(
    res,
    mapped.http,
    { error: { message: err.message, type: mapped.openaiType, param: null, code: err.kind } },
    headers,
  );
}
