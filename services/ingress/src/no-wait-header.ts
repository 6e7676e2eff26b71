/**
 * The request header (REST) or metadata key (gRPC, Connect) with which a caller asks not to
 * wait for a model to load: `shoal-no-wait: 1` (or `true`). Without it a request for a model
 * with no resident copy waits, within its deadline, for the load it triggers.
 */
export const NO_WAIT_HEADER = "shoal-no-wait";

export function wantsNoWait(value: string | readonly string[] | null | undefined): boolean {
  const first = typeof value === "string" ? value : value?.[0];
  return first !== undefined && ["1", "true"].includes(first.trim().toLowerCase());
}
