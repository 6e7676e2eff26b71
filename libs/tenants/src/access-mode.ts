import { isIP } from "node:net";
import { ConfigError } from "@shoal/config";

/**
 * Whether requests must carry an API key of a tenant in the store (`keys`), or anyone who
 * reaches the service may use all of it (`open`, the loopback quickstart). Set by `SHOAL_AUTH`
 * (`keys` or `none`) for ingress and the adapter registry alike.
 */
export type AccessMode = "open" | "keys";

/** Whether `host` only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  if (host === "localhost" || host === "::1") return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

/**
 * How a service listening on `host` decides who may call it, from `SHOAL_AUTH`. Unset, it is
 * open on loopback (the quickstart) and refuses to start on any other address: serving a
 * network without keys is a choice the operator has to write down (`SHOAL_AUTH=none`), never a
 * default.
 *
 * @throws ConfigError for an unknown setting, or a non-loopback host with none.
 */
export function accessMode(service: string, host: string, setting: string | undefined): AccessMode {
  if (setting === "keys") return "keys";
  if (setting === "none") return "open";
  if (setting !== undefined) {
    throw new ConfigError(`SHOAL_AUTH must be keys or none, not ${JSON.stringify(setting)}`);
  }
  if (isLoopback(host)) return "open";
  throw new ConfigError(
    `${service} would serve ${host} without API keys: set SHOAL_AUTH=keys to require them ` +
      "(npm run keys creates them), or SHOAL_AUTH=none to serve that network without",
  );
}
