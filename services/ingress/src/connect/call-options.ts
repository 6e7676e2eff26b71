import type { HandlerContext } from "@connectrpc/connect";
import type { Priority } from "@shoal/proto";
import { NO_WAIT_HEADER, wantsNoWait } from "../no-wait-header.js";

/**
 * What every unary inference call takes alike from its request and its RPC context: the
 * truncation flag (on unless the client says otherwise), priority, the client's deadline as
 * the work item's, and whether it asked not to wait for a model to load.
 */
export function callOptions(
  req: { readonly truncate?: boolean; readonly priority: Priority },
  ctx: HandlerContext,
): { truncate: boolean; priority: Priority; timeoutMs: number | undefined; noWait: boolean } {
  return {
    truncate: req.truncate ?? true,
    priority: req.priority,
    timeoutMs: ctx.timeoutMs(),
    noWait: wantsNoWait(ctx.requestHeader.get(NO_WAIT_HEADER)),
  };
}
