import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { create, type DescService } from "@bufbuild/protobuf";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Status,
  type HealthCheckRequest,
  type HealthCheckResponse,
} from "@shoal/proto";
import type { ServingStatus } from "./serving-status.js";

export interface HealthOptions {
  readonly status: ServingStatus;
  /** Services reported beside the server as a whole (`""`); any other name is unknown. */
  readonly services: readonly DescService[];
}

/**
 * `grpc.health.v1.Health`: every known service shares the server's status, because all of
 * them depend on the same NATS connection.
 */
export function healthRoutes(options: HealthOptions): (router: ConnectRouter) => void {
  const known = new Set(["", ...options.services.map((s) => s.typeName)]);
  const { status } = options;
  return (router) => {
    router.service(Health, {
      check(req: HealthCheckRequest): HealthCheckResponse {
        if (!known.has(req.service)) {
          throw new ConnectError(`unknown service "${req.service}"`, Code.NotFound);
        }
        return response(status.serving ? Status.SERVING : Status.NOT_SERVING);
      },
      async *watch(req: HealthCheckRequest, ctx: HandlerContext) {
        // An unknown service stays SERVICE_UNKNOWN for the life of the call, as the protocol
        // asks, instead of failing it: the client keeps watching and sees no spurious changes.
        let last: Status | undefined;
        for await (const serving of status.watch(ctx.signal)) {
          const next = !known.has(req.service)
            ? Status.SERVICE_UNKNOWN
            : serving
              ? Status.SERVING
              : Status.NOT_SERVING;
          if (next !== last) yield response(next);
          last = next;
        }
      },
    });
  };
}

function response(status: Status): HealthCheckResponse {
  return create(HealthCheckResponseSchema, { status });
}
