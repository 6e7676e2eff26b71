import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { DescService } from "@bufbuild/protobuf";

/** The request path of every RPC of `services`: `/<package.Service>/<Method>`. */
export function rpcPaths(services: readonly DescService[]): ReadonlySet<string> {
  return new Set(services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
}

/**
 * Refuses a request to an RPC's path with any method but POST, and returns whether it did: 405
 * with `Allow: POST` and a body in Connect's error shape naming what to do. The Connect adapter
 * answers these with an empty 405 (Connect's GET is only for methods marked free of side
 * effects, and none of Shoal's are). Other paths are left to the adapter's own 404.
 */
export function refuseWrongMethod(
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
  path: string,
  paths: ReadonlySet<string>,
): boolean {
  if (req.method === "POST" || !paths.has(path)) return false;
  const body = JSON.stringify({
    code: "unimplemented",
    message: `${req.method ?? ""} is not allowed on ${path}; RPCs take POST`,
  });
  res.writeHead(405, {
    allow: "POST",
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
  req.resume();
  return true;
}
