import type { IncomingMessage, ServerResponse } from "node:http";
import type { HttpError } from "./error-table.js";

/** Sends a JSON answer. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(bytes.byteLength),
    ...headers,
  });
  res.end(bytes);
}

/**
 * Sends `{ "error": { "code", "message" } }`. When the request's body was not read to its end
 * (a refused or cut-off upload) the connection is closed after the answer, so the rest of the
 * body is never read and cannot be taken for the next request.
 */
export function sendError(req: IncomingMessage, res: ServerResponse, error: HttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = { ...error.headers };
  if (!req.complete) headers["connection"] = "close";
  sendJson(res, error.status, { error: { code: error.code, message: error.message } }, headers);
}
