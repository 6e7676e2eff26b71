/** Admin actions a key may be granted. */
export const ADMIN_ACTIONS = ["tenants", "models", "usage"] as const;
/**
 * `tenants`: create and change tenants and their keys; `models`: pin, unpin and evict models;
 * `usage`: read every tenant's usage (a tenant always reads its own).
 */
export type AdminAction = (typeof ADMIN_ACTIONS)[number];

/** What a tenant's keys may do. */
export interface Grants {
  /**
   * Catalog model ids the tenant may call, `*` for every one. An adapter is called through its
   * base model, so the base must be granted too.
   */
  readonly models: readonly string[];
  readonly admin: readonly AdminAction[];
}

/** Every model, no admin action: what a tenant gets unless told otherwise. */
export const DEFAULT_GRANTS: Grants = Object.freeze({ models: Object.freeze(["*"]), admin: [] });

export function allowsModel(grants: Grants, modelId: string): boolean {
  return grants.models.includes("*") || grants.models.includes(modelId);
}

export function allowsAdmin(grants: Grants, action: AdminAction): boolean {
  return grants.admin.includes(action);
}
