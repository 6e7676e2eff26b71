import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { InvalidArgumentError, PayloadTooLargeError } from "@shoal/gateway";

export type HttpRequest = IncomingMessage | Http2ServerRequest;

/**
 * Reads a request body up to `limitBytes`. A declared `Content-Length` over the limit is
 * refused before a byte is read; an undeclared body is cut off the moment it passes the limit,
 * so a hostile client cannot make ingress buffer more than the limit.
 */
export async function readBody(req: HttpRequest, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (Number.isFinite(declared) && declared > limitBytes) {
    throw new PayloadTooLargeError(limitBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) {
      req.pause();
      throw new PayloadTooLargeError(limitBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Parses a JSON body, turning a syntax error into a one-line 400. */
export function parseJson(body: Buffer): unknown {
  if (body.length === 0) throw new InvalidArgumentError("request body is empty; expected JSON");
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (err) {
    throw new InvalidArgumentError(
      `malformed JSON: ${(err as Error).message.split("\n")[0] ?? ""}`,
    );
  }
}
