import { UnauthenticatedRequestError, type AccessMode } from "@shoal/gateway";
import {
  audit,
  authenticate,
  bearerKey,
  UnauthenticatedError,
  type Principal,
  type TenantDirectory,
} from "@shoal/tenants";
import type { Logger } from "@shoal/telemetry";

/**
 * Who a request acts for, decided once at the edge from its `authorization` header — the
 * same header whether it came as REST (`Bearer`, what the OpenAI SDKs send), gRPC metadata,
 * Connect or MessagePack. On an open cluster every request acts for nobody in particular.
 */
export class EdgeAuth {
  readonly mode: AccessMode;
  readonly #directory: TenantDirectory | undefined;
  readonly #logger: Logger;

  private constructor(mode: AccessMode, directory: TenantDirectory | undefined, logger: Logger) {
    this.mode = mode;
    this.#directory = directory;
    this.#logger = logger;
  }

  static open(logger: Logger): EdgeAuth {
    return new EdgeAuth("open", undefined, logger);
  }

  /** Every request needs a key `directory` knows. */
  static keys(directory: TenantDirectory, logger: Logger): EdgeAuth {
    return new EdgeAuth("keys", directory, logger);
  }

  /**
   * The principal of a request; undefined on an open cluster.
   *
   * @throws UnauthenticatedRequestError for a missing, malformed, unknown or revoked key,
   *   after writing the audit line (with the key's prefix when it had a key's shape).
   */
  principal(authorization: string | undefined, route: string): Principal | undefined {
    if (this.#directory === undefined) return undefined;
    try {
      return authenticate(this.#directory, bearerKey(authorization));
    } catch (err) {
      if (!(err instanceof UnauthenticatedError)) throw err;
      audit(this.#logger, {
        action: "request",
        outcome: "denied",
        keyPrefix: err.keyPrefix,
        target: route,
        reason: err.reason,
      });
      throw new UnauthenticatedRequestError(err.message);
    }
  }
}
