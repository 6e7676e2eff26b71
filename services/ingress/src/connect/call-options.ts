import type { HandlerContext } from "@connectrpc/connect";
import type { Priority } from "@shoal/proto";
import type { Principal } from "@shoal/tenants";
import { CALLER } from "./caller-key.js";
import { NO_WAIT_HEADER, wantsNoWait } from "../no-wait-header.js";

/** What an RPC's transport says about a call: its deadline and its metadata. */
export interface RpcCall {
  /** The client's deadline, ms; undefined when it set none. */
  readonly timeoutMs: number | undefined;
  header(name: string): string | undefined;
  /** Whom the call acts for, as the edge authenticated it. */
  readonly caller: Principal | undefined;
}

/** A call as the Connect adapter hands it over. */
export function connectCall(ctx: HandlerContext): RpcCall {
  return {
    timeoutMs: ctx.timeoutMs(),
    header: (name) => ctx.requestHeader.get(name) ?? undefined,
    caller: ctx.values.get(CALLER),
  };
}

/**
 * What every unary inference call takes alike from its request and its RPC call, whichever
 * path serves it: the truncation flag (on unless the client says otherwise), priority, the
 * client's deadline as the work item's, whether it asked not to wait for a model to load,
 * and whom it acts for.
 */
export function callOptions(
  req: { readonly truncate?: boolean; readonly priority: Priority },
  call: RpcCall,
): {
  truncate: boolean;
  priority: Priority;
  timeoutMs: number | undefined;
  noWait: boolean;
  caller: Principal | undefined;
} {
  return {
    truncate: req.truncate ?? true,
    priority: req.priority,
    timeoutMs: call.timeoutMs,
    noWait: wantsNoWait(call.header(NO_WAIT_HEADER)),
    caller: call.caller,
  };
}
