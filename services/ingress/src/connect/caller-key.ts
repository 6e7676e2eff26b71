import { createContextKey } from "@connectrpc/connect";
import type { Principal } from "@shoal/tenants";

/**
 * Where the auth interceptor leaves an RPC's principal for its handler: undefined on an open
 * cluster, and for services that need no key (health, reflection).
 */
export const CALLER = createContextKey<Principal | undefined>(undefined, {
  description: "the principal the call's API key authenticated as",
});
