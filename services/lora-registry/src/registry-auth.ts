import {
  DEFAULT_GRANTS,
  NO_LIMITS,
  RequestAuth,
  UnauthenticatedError as KeyRefused,
  type Principal,
} from "@shoal/tenants";
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
  readonly #auth: RequestAuth;

  constructor(auth: RequestAuth) {
    this.#auth = auth;
  }

  /**
   * The principal an `Authorization` header acts for.
   *
   * @throws UnauthenticatedError (401) for a missing, malformed, unknown or revoked key, after
   *   the audit line.
   */
  authenticate(authorization: string | undefined, target: string): Principal {
    try {
      return this.#auth.principal(authorization, "registry.request", target) ?? OPEN_PRINCIPAL;
    } catch (err) {
      if (err instanceof KeyRefused) throw new UnauthenticatedError(err.message);
      throw err;
    }
  }
}
