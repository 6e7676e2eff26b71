import {
  ADMIN_ACTIONS,
  checkLimits,
  DEFAULT_GRANTS,
  LimitsError,
  NO_LIMITS,
  TenantStoreError,
  type AdminAction,
  type Grants,
  type KeyRecord,
  type TenantLimits,
  type TenantRecord,
  type TenantStore,
} from "@shoal/tenants";

/** A mistake in the command line; exit status 2 with the usage. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export interface KeysArgs {
  readonly command: string | undefined;
  readonly operand: string | undefined;
  readonly tenant?: string | undefined;
  readonly label?: string | undefined;
  readonly models?: string | undefined;
  readonly admin?: string | undefined;
  readonly rps?: string | undefined;
  readonly tps?: string | undefined;
  readonly concurrency?: string | undefined;
}

/** What a command printed: lines for people, and the same facts as JSON for scripts. */
export interface CommandResult {
  readonly lines: readonly string[];
  readonly json: unknown;
}

/** Grants from `--models a,b|*` and `--admin tenants,usage` over `base`. */
export function grantsOf(args: KeysArgs, base: Grants): Grants {
  const list = (value: string): string[] =>
    value
      .split(",")
      .map((v) => v.trim())
      .filter((v) => v !== "");
  const admin = args.admin === undefined ? base.admin : list(args.admin);
  const unknown = admin.find((a) => !(ADMIN_ACTIONS as readonly string[]).includes(a));
  if (unknown !== undefined) {
    throw new UsageError(`--admin: ${unknown} is not one of ${ADMIN_ACTIONS.join(", ")}`);
  }
  return {
    models: args.models === undefined ? base.models : list(args.models),
    admin: admin as AdminAction[],
  };
}

/**
 * Limits from `--rps`, `--tps` and `--concurrency` over `base`; `0` removes a limit.
 */
export function limitsOf(args: KeysArgs, base: TenantLimits): TenantLimits {
  const next: Record<string, number | undefined> = { ...base };
  const flags = [
    ["rps", "requestsPerSecond"],
    ["tps", "tokensPerSecond"],
    ["concurrency", "maxConcurrent"],
  ] as const;
  for (const [flag, field] of flags) {
    const raw = args[flag];
    if (raw === undefined) continue;
    const value = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(value) || value < 0) {
      throw new UsageError(`--${flag} must be a number, 0 for no limit`);
    }
    next[field] = value === 0 ? undefined : value;
  }
  try {
    return checkLimits(Object.fromEntries(Object.entries(next).filter(([, v]) => v !== undefined)));
  } catch (err) {
    if (err instanceof LimitsError) throw new UsageError(err.message);
    throw err;
  }
}

function describeLimits(limits: TenantLimits | undefined): string {
  const parts = [
    limits?.requestsPerSecond === undefined ? [] : [`rps=${limits.requestsPerSecond}`],
    limits?.tokensPerSecond === undefined ? [] : [`tps=${limits.tokensPerSecond}`],
    limits?.maxConcurrent === undefined ? [] : [`concurrency=${limits.maxConcurrent}`],
  ].flat();
  return parts.length === 0 ? "unlimited" : parts.join(",");
}

function describeTenant(t: TenantRecord): string {
  const admin = t.grants.admin.length === 0 ? "none" : t.grants.admin.join(",");
  return (
    `${t.name}  models=${t.grants.models.join(",")}  admin=${admin}  ` +
    `limits=${describeLimits(t.limits)}  created=${t.createdAt}`
  );
}

function describeKey(k: KeyRecord): string {
  const state = k.revokedAt === undefined ? "active" : `revoked ${k.revokedAt}`;
  return `${k.prefix}  ${k.tenant}  ${JSON.stringify(k.label)}  created=${k.createdAt}  ${state}`;
}

/** What to do with a freshly made key: it is shown here and never again. */
function shownOnce(key: string, record: KeyRecord): CommandResult {
  return {
    lines: [
      key,
      `(key ${record.prefix} for tenant ${record.tenant}: shown once, store it now; ` +
        `Shoal keeps only its hash)`,
    ],
    json: { key, ...record },
  };
}

function required(value: string | undefined, what: string): string {
  if (value === undefined || value === "") throw new UsageError(`${what} is required`);
  return value;
}

/**
 * Runs one `npm run keys` command against the tenant store. Every change is a compare-and-set
 * on the KV bucket, so it reaches every ingress's copy within moments.
 */
export async function runCommand(store: TenantStore, args: KeysArgs): Promise<CommandResult> {
  switch (args.command) {
    case "tenant": {
      const name = required(args.operand, "a tenant name (npm run keys -- tenant acme)");
      const current = store.tenant(name);
      const record =
        current === undefined
          ? await store.createTenant(
              name,
              grantsOf(args, DEFAULT_GRANTS),
              limitsOf(args, NO_LIMITS),
            )
          : await store.updateTenant(name, {
              grants: grantsOf(args, current.grants),
              limits: limitsOf(args, current.limits ?? NO_LIMITS),
            });
      return {
        lines: [`${current === undefined ? "created" : "updated"} ${describeTenant(record)}`],
        json: record,
      };
    }
    case "tenants": {
      const all = store.tenants();
      return { lines: all.map(describeTenant), json: all };
    }
    case "create": {
      const tenant = required(args.tenant, "--tenant");
      const made = await store.createKey(tenant, args.label ?? "");
      return shownOnce(made.key, made.record);
    }
    case "list": {
      const keys = store.keys(args.tenant);
      return { lines: keys.map(describeKey), json: keys };
    }
    case "revoke": {
      const record = await store.revokeKey(required(args.operand, "a key prefix"));
      return { lines: [`revoked ${describeKey(record)}`], json: record };
    }
    case "rotate": {
      const made = await store.rotateKey(required(args.operand, "a key prefix"));
      return shownOnce(made.key, made.record);
    }
    default:
      throw new UsageError(
        args.command === undefined ? "a command is required" : `no command ${args.command}`,
      );
  }
}

export { TenantStoreError };
