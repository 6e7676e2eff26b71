export { accessMode, isLoopback, type AccessMode } from "./access-mode.js";
export { audit, type AuditEvent } from "./audit.js";
export {
  authenticate,
  UnauthenticatedError,
  type Principal,
  type TenantDirectory,
} from "./authenticator.js";
export {
  ADMIN_ACTIONS,
  allowsAdmin,
  allowsModel,
  DEFAULT_GRANTS,
  type AdminAction,
  type Grants,
} from "./grants.js";
export {
  decodeGrants,
  isTenantName,
  RecordError,
  TENANTS_BUCKET,
  type KeyRecord,
  type TenantRecord,
} from "./records.js";
export { RequestAuth } from "./request-auth.js";
export { TenantStore, TenantStoreError } from "./tenant-store.js";
export { checkLimits, LimitsError, NO_LIMITS, type TenantLimits } from "./limits.js";
export { QuotaExceededError, TenantQuotas } from "./quotas.js";
export { USAGE_BUCKET, UsageMeter, type UsageRecord } from "./usage-meter.js";
