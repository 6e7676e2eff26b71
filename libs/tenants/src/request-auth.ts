import type { Logger } from "@shoal/telemetry";
import { audit } from "./audit.js";
import {
  authenticate,
  bearerKey,
  UnauthenticatedError,
  type Principal,
  type TenantDirectory,
} from "./authenticator.js";

/**
 * Who a request acts for, from its `Authorization` header, for every service that takes API
 * keys: with keys required, the principal its key authenticates as; open, nobody in
 * particular. Every refusal leaves an audit line with the key's public prefix.
 */
export class RequestAuth {
  readonly #directory: TenantDirectory | undefined;
  readonly #logger: Logger;

  private constructor(directory: TenantDirectory | undefined, logger: Logger) {
    this.#directory = directory;
    this.#logger = logger;
  }

  static open(logger: Logger): RequestAuth {
    return new RequestAuth(undefined, logger);
  }

  /** Every request needs a key `directory` knows. */
  static keys(directory: TenantDirectory, logger: Logger): RequestAuth {
    return new RequestAuth(directory, logger);
  }

  /**
   * The principal of a request; undefined on an open cluster.
   *
   * @param action what the audit line calls the request (`request`, `registry.request`).
   * @throws UnauthenticatedError for a missing, malformed, unknown or revoked key, after
   *   writing the audit line.
   */
  principal(
    authorization: string | undefined,
    action: string,
    target: string,
  ): Principal | undefined {
    if (this.#directory === undefined) return undefined;
    try {
      return authenticate(this.#directory, bearerKey(authorization));
    } catch (err) {
      if (err instanceof UnauthenticatedError) {
        audit(this.#logger, {
          action,
          outcome: "denied",
          keyPrefix: err.keyPrefix,
          target,
          reason: err.reason,
        });
      }
      throw err;
    }
  }
}
