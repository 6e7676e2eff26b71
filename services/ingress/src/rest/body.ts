import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { Decoder } from "@msgpack/msgpack";
import { InvalidArgumentError, PayloadTooLargeError } from "@shoal/gateway";

export type HttpRequest = IncomingMessage | Http2ServerRequest;

/** The body formats REST routes read and write. */
export type BodyFormat = "json" | "msgpack";

export const MSGPACK_MEDIA_TYPE = "application/msgpack";

/**
 * MessagePack media types seen in the wild: `application/msgpack` (the IANA-registered
 * `application/vnd.msgpack` is rare) and the older `application/x-msgpack`.
 */
const MSGPACK_TYPES = new Set([
  MSGPACK_MEDIA_TYPE,
  "application/x-msgpack",
  "application/vnd.msgpack",
]);

/** True when a media type (parameters allowed) names MessagePack. */
export function isMsgpack(mediaType: string | undefined): boolean {
  const type = (mediaType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  return MSGPACK_TYPES.has(type);
}

/** The format of a request's body, from its `Content-Type`; anything else is read as JSON. */
export function requestFormat(req: HttpRequest): BodyFormat {
  return isMsgpack(req.headers["content-type"]) ? "msgpack" : "json";
}

/**
 * Reads and decodes a request body in the format its `Content-Type` names, within
 * `limitBytes`. Every REST route reads its body through here, so each one accepts JSON and
 * MessagePack alike.
 */
export async function readRequest(req: HttpRequest, limitBytes: number): Promise<unknown> {
  const body = await readBody(req, limitBytes);
  return requestFormat(req) === "msgpack" ? parseMsgpack(body) : parseJson(body);
}

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

/**
 * Parses a MessagePack body, turning any decoding failure into a one-line 400. Every element
 * takes at least one byte, so no declared length beyond the body's own size can be genuine:
 * capping lengths at it stops a few hostile header bytes from asking for a huge allocation.
 * Trailing bytes after the value are an error too, as in JSON.
 */
export function parseMsgpack(body: Buffer): unknown {
  if (body.length === 0) {
    throw new InvalidArgumentError("request body is empty; expected MessagePack");
  }
  const cap = body.length;
  const decoder = new Decoder({
    maxStrLength: cap,
    maxBinLength: cap,
    maxArrayLength: cap,
    maxMapLength: cap,
    maxExtLength: cap,
  });
  try {
    return decoder.decode(body);
  } catch (err) {
    throw new InvalidArgumentError(
      `malformed MessagePack: ${(err as Error).message.split("\n")[0] ?? ""}`,
    );
  }
}
