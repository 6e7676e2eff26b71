import type { Interceptor } from "@connectrpc/connect";
import { InferenceService } from "@shoal/proto";
import type { EdgeAuth } from "../edge-auth.js";
import { asRequestError, toConnectError } from "../error-table.js";
import type { Edge } from "../traced.js";
import { countRefused } from "../traced.js";
import { CALLER } from "./caller-key.js";

/**
 * Authenticates every `InferenceService` call from its `authorization` metadata before the
 * handler runs, whichever of gRPC, gRPC-Web or Connect carried it, and hands the handler its
 * principal through {@link CALLER}. Health and reflection need no key: probes and tools must
 * reach them without one, and they serve no model.
 */
export function authInterceptor(auth: EdgeAuth, edge: Edge): Interceptor {
  return (next) => (req) => {
    if (req.service.typeName === InferenceService.typeName) {
      try {
        req.contextValues.set(
          CALLER,
          auth.principal(req.header.get("authorization") ?? undefined, req.url),
        );
      } catch (err) {
        countRefused(edge, req.method.name, err);
        throw toConnectError(asRequestError(err));
      }
    }
    return next(req);
  };
}
