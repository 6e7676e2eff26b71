import type { NatsConnection } from "@nats-io/transport-node";
import type { ModelEntry } from "@shoal/config";
import { wantSubject, type ResidencyView } from "@shoal/residency";
import { RequestError } from "./errors.js";

/** A no-wait request for a model with no resident copy (`503` / UNAVAILABLE, `Retry-After`). */
export class ModelLoadingError extends RequestError {
  override readonly name = "ModelLoadingError";
  readonly kind = "unavailable";
  constructor(
    model: string,
    /** When a copy is likely resident, in seconds. */
    readonly retryAfterSeconds: number,
  ) {
    super(`model "${model}" is not loaded yet; retry after ${retryAfterSeconds} s`);
  }
}

/**
 * Refuses a call that asked not to wait (`noWait`) when its model has no resident copy, so
 * the client can go elsewhere instead of spending its deadline on a load; and tells the
 * model-loaders it wants the model, since the refused request never reaches the queue they
 * read demand from. Calls that may wait, and models no model-loader places, pass.
 *
 * The retry hint is a second when a copy is already loading, two otherwise (a placement tick
 * plus a typical load from the local cache).
 */
export function refuseUnlessResident(
  nc: NatsConnection,
  residency: ResidencyView | undefined,
  model: ModelEntry,
  noWait: boolean | undefined,
): void {
  if (noWait !== true || residency === undefined) return;
  const availability = residency.availability(model.key);
  if (availability === "resident" || availability === "unmanaged") return;
  nc.publish(wantSubject(model.key));
  throw new ModelLoadingError(model.id, availability === "loading" ? 1 : 2);
}
