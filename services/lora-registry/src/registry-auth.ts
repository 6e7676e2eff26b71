import {
  audit,
  authenticate,
  bearerKey,
  DEFAULT_GRANTS,
  NO_LIMITS,
  UnauthenticatedError as KeyRefused,
  type AccessMode,
  type Principal,
  type TenantDirectory,
} from "@shoal/tenants";
import type { Logger } from "@shoal/telemetry";
import { UnauthenticatedError } from "./errors.js";

/** The tenant every request acts as on an open registry. */
export const DEFAULT_TENANT = "default";

const OPEN_PRINCIPAL: Principal = Object.freeze({
  tenant: DEFAULT_TENANT,
  keyPrefix: "",
  grants: DEFAULT_GRANTS,
  limits: NO_LIMITS,
});

/**
 * Who a registry request acts for: with keys (`SHOAL_AUTH=keys`), the tenant of the API key in
 * `Authorization: Bearer`, checked against the same tenant store ingress reads, so one key
 * publishes an adapter and runs it; open, everyone is {@link DEFAULT_TENANT}.
 */
export class RegistryAuth {
  readonly mode: AccessMode;
  readonly #directory: TenantDirectory | undefined;
  readonly #logger: Logger;

  private constructor(mode: AccessMode, directory: TenantDirectory | undefined, logger: Logger) {
    this.mode = mode;
    this.#directory = directory;
    this.#logger = logger;
  }

  static open(logger: Logger): RegistryAuth {
    return new RegistryAuth("open", undefined, logger);
  }

  static keys(directory: TenantDirectory, logger: Logger): RegistryAuth {
    return new RegistryAuth("keys", directory, logger);
  }

  /**
   * The principal an `Authorization` header acts for.
   *
   * @throws UnauthenticatedError (401) for a missing, malformed, unknown or revoked key, after
   *   writing the audit line.
   */
  authenticate(authorization: string | undefined, target: string): Principal {
    if (this.#directory === undefined) return OPEN_PRINCIPAL;
    try {
      return authenticate(this.#directory, bearerKey(authorization));
    } catch (err) {
      if (!(err instanceof KeyRefused)) throw err;
      audit(this.#logger, {
        action: "registry.request",
        outcome: "denied",
        keyPrefix: err.keyPrefix,
        target,
        reason: err.reason,
      });
      throw new UnauthenticatedError(err.message);
    }
  }
}
