import { UnauthenticatedRequestError } from "@shoal/gateway";
import { RequestAuth, UnauthenticatedError, type Principal } from "@shoal/tenants";

/**
 * Who a request acts for, decided once at the edge from its `authorization` header — the
 * same header whether it came as REST (`Bearer`, what the OpenAI SDKs send), gRPC metadata,
 * Connect or MessagePack — as the gateway's error every protocol knows how to answer.
 */
export class EdgeAuth {
  readonly #auth: RequestAuth;

  constructor(auth: RequestAuth) {
    this.#auth = auth;
  }

  /**
   * The principal of a request; undefined on an open cluster.
   *
   * @throws UnauthenticatedRequestError for a missing, malformed, unknown or revoked key,
   *   after the audit line.
   */
  principal(authorization: string | undefined, route: string): Principal | undefined {
    try {
      return this.#auth.principal(authorization, "request", route);
    } catch (err) {
      if (err instanceof UnauthenticatedError) throw new UnauthenticatedRequestError(err.message);
      throw err;
    }
  }
}
