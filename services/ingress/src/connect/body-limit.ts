import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { PayloadTooLargeError } from "@shoal/gateway";
import { grpcMessage } from "../grpc/wire.js";

/**
 * Refuses an RPC whose declared `content-length` is over the body limit before anything of it
 * is read, the way REST answers 413, and returns whether it did. The refusal says
 * INVALID_ARGUMENT, not the Connect adapter's RESOURCE_EXHAUSTED, which clients treat as
 * "retry later" while this request can never succeed as it is: gRPC and gRPC-Web get it as
 * `grpc-status`, Connect as its JSON error with HTTP 413. A body that declares no length is
 * cut off by the adapter's own read limit once it passes it.
 */
export function refuseOversizedRpc(
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
  maxBodyBytes: number,
): boolean {
  const declared = Number(req.headers["content-length"]);
  if (!(declared > maxBodyBytes)) return false;
  const message = new PayloadTooLargeError(maxBodyBytes).message;
  const contentType = req.headers["content-type"] ?? "";
  // The unread rest of an HTTP/1.1 body would be parsed as the next request.
  const close: Record<string, string> = req.httpVersionMajor === 1 ? { connection: "close" } : {};
  if (contentType.startsWith("application/grpc")) {
    res.writeHead(200, {
      "content-type": contentType.split(";")[0] ?? contentType,
      "grpc-status": "3",
      "grpc-message": grpcMessage(message),
      ...close,
    });
    res.end();
  } else {
    const body = JSON.stringify({ code: "invalid_argument", message });
    res.writeHead(413, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      ...close,
    });
    res.end(body);
  }
  req.resume();
  return true;
}
