import type { Logger } from "@shoal/telemetry";

/** One line of the audit trail: an admin action, or a request refused for its key. */
export interface AuditEvent {
  /** What was attempted: `request`, `tenant.create`, `key.revoke`, … */
  readonly action: string;
  readonly outcome: "done" | "denied";
  /** The acting tenant, when its key checked out. */
  readonly tenant?: string | undefined;
  /** The presented key's public prefix: never the key. */
  readonly keyPrefix?: string | undefined;
  /** What it was attempted on: a route, a model, a tenant or key. */
  readonly target?: string | undefined;
  /** Why it was denied, for the operator (the client saw less). */
  readonly reason?: string | undefined;
}

/**
 * Writes an audit line: JSON with `audit: true` so a log pipeline can route every such line
 * to the audit store, whichever process wrote it. Denials are warnings, changes information.
 */
export function audit(logger: Logger, event: AuditEvent): void {
  const fields = {
    audit: true,
    action: event.action,
    outcome: event.outcome,
    ...(event.tenant === undefined ? {} : { tenant: event.tenant }),
    ...(event.keyPrefix === undefined ? {} : { key_prefix: event.keyPrefix }),
    ...(event.target === undefined ? {} : { target: event.target }),
    ...(event.reason === undefined ? {} : { reason: event.reason }),
  };
  if (event.outcome === "denied") logger.warn(fields, `audit: ${event.action} denied`);
  else logger.info(fields, `audit: ${event.action}`);
}
