import type { IncomingMessage } from "node:http";
import { BadRequestError, PayloadTooLargeError } from "./errors.js";

/**
 * A small JSON request body (settings, not uploads), read whole within `limitBytes`: a declared
 * length over it is refused before reading, an undeclared one as soon as it passes it.
 *
 * @throws PayloadTooLargeError, BadRequestError
 */
export async function jsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (Number.isFinite(declared) && declared > limitBytes) {
    throw new PayloadTooLargeError(`the body is larger than ${limitBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) {
      throw new PayloadTooLargeError(`the body is larger than ${limitBytes} bytes`);
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new BadRequestError("the body is not JSON");
  }
}
