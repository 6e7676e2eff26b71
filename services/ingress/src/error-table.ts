import { Code, ConnectError } from "@connectrpc/connect";
import { InternalError, RequestError } from "@shoal/gateway";

/** How one domain error looks in each protocol ingress speaks. */
export interface ProtocolError {
  readonly connect: Code;
  readonly http: number;
  /** OpenAI's `error.type`. */
  readonly openaiType: string;
}

/**
 * The one place domain errors become protocol statuses. Overload is RESOURCE_EXHAUSTED/429,
 * bad input INVALID_ARGUMENT/400, unknown model NOT_FOUND/404, no valid API key
 * UNAUTHENTICATED/401, a model outside the key's grants PERMISSION_DENIED/403, an unhealthy
 * pipeline UNAVAILABLE/503.
 */
const TABLE: Readonly<Record<RequestError["kind"], ProtocolError>> = {
  invalid_argument: {
    connect: Code.InvalidArgument,
    http: 400,
    openaiType: "invalid_request_error",
  },
  not_found: { connect: Code.NotFound, http: 404, openaiType: "invalid_request_error" },
  unauthenticated: { connect: Code.Unauthenticated, http: 401, openaiType: "authentication_error" },
  permission_denied: {
    connect: Code.PermissionDenied,
    http: 403,
    openaiType: "permission_error",
  },
  deadline_exceeded: { connect: Code.DeadlineExceeded, http: 504, openaiType: "timeout_error" },
  resource_exhausted: {
    connect: Code.ResourceExhausted,
    http: 429,
    openaiType: "rate_limit_error",
  },
  // Not RESOURCE_EXHAUSTED, which clients retry: the same request can never succeed.
  payload_too_large: {
    connect: Code.InvalidArgument,
    http: 413,
    openaiType: "invalid_request_error",
  },
  unavailable: { connect: Code.Unavailable, http: 503, openaiType: "service_unavailable_error" },
  internal: { connect: Code.Internal, http: 500, openaiType: "server_error" },
};

/** Any thrown value as a domain error; unknown ones become internal (their cause is logged). */
export function asRequestError(err: unknown): RequestError {
  return err instanceof RequestError ? err : new InternalError("internal error", { cause: err });
}

export function protocolError(err: RequestError): ProtocolError {
  return TABLE[err.kind];
}

/** The Connect/gRPC form of a domain error; only its client-safe message travels. */
export function toConnectError(err: RequestError): ConnectError {
  return new ConnectError(err.message, protocolError(err).connect);
}
