import type { Catalog, ModelEntry } from "@shoal/config";
import { allowsModel, type AccessMode, type Principal } from "@shoal/tenants";
import {
  ModelNotFoundError,
  PermissionDeniedError,
  UnauthenticatedRequestError,
} from "./errors.js";

export type { AccessMode };

/** Who may run an adapter besides its owner: tenant names, or `*` for every tenant. */
export interface AdapterSharing {
  readonly owner: string;
  readonly sharedWith?: readonly string[] | undefined;
}

/**
 * What one call may use: the catalog models its tenant's grants name, and the adapters it
 * owns or that were shared with it. Every family's validation looks models up through here,
 * so no protocol can reach a model without the check.
 */
export class ModelAccess {
  readonly #catalog: Catalog;
  readonly #caller: Principal | undefined;

  private constructor(catalog: Catalog, caller: Principal | undefined) {
    this.#catalog = catalog;
    this.#caller = caller;
  }

  /**
   * The access of a call acting for `caller`.
   *
   * @throws UnauthenticatedRequestError when keys are required and the call carries none: a
   *   protocol handler that forgot to pass its caller refuses rather than serves.
   */
  static of(catalog: Catalog, mode: AccessMode, caller: Principal | undefined): ModelAccess {
    if (mode === "keys" && caller === undefined) {
      throw new UnauthenticatedRequestError("an API key is required");
    }
    return new ModelAccess(catalog, caller);
  }

  /** Every model, for everyone: what tests and open clusters use. */
  static open(catalog: Catalog): ModelAccess {
    return new ModelAccess(catalog, undefined);
  }

  get caller(): Principal | undefined {
    return this.#caller;
  }

  /** The catalog models this call may use, in catalog order. */
  models(): readonly ModelEntry[] {
    const caller = this.#caller;
    return caller === undefined
      ? this.#catalog.models
      : this.#catalog.models.filter((m) => allowsModel(caller.grants, m.id));
  }

  /**
   * The catalog entry with id `id`.
   *
   * @throws ModelNotFoundError listing only the models this call may use, so an unknown name
   *   teaches a tenant nothing about models outside its grants.
   * @throws PermissionDeniedError for a catalog model outside the grants.
   */
  model(id: string): ModelEntry {
    const entry = this.#catalog.find(id);
    if (entry === undefined) {
      throw new ModelNotFoundError(
        id,
        this.models().map((m) => m.id),
      );
    }
    if (this.#caller !== undefined && !allowsModel(this.#caller.grants, entry.id)) {
      throw new PermissionDeniedError(
        `tenant ${this.#caller.tenant} has no grant for model "${entry.id}"`,
        this.#caller.tenant,
        this.#caller.keyPrefix,
        entry.id,
      );
    }
    return entry;
  }

  /** Whether this call may see and run an adapter: its owner's, shared with it, or public. */
  seesAdapter(adapter: AdapterSharing): boolean {
    const caller = this.#caller;
    if (caller === undefined) return true;
    const shared = adapter.sharedWith ?? [];
    return (
      adapter.owner === caller.tenant || shared.includes("*") || shared.includes(caller.tenant)
    );
  }
}
