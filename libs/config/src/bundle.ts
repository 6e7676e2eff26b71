import { readFile } from "node:fs/promises";
import { ConfigError } from "./errors.js";
import { compileServing, type ServingDefaults } from "./model-serving.js";

/**
 * A config bundle: serving settings tuned for one hardware profile (`bundles/<profile>.json`,
 * written by `npm run autotune`), per model id. A catalog loaded with a bundle takes each
 * model's settings from it over the catalog entry's own `serving`; models the bundle does not
 * name keep theirs. `measured` records how the settings were found (command, machine, knees
 * tuned vs untuned) for people; nothing reads it.
 */
export interface ConfigBundle {
  /** The hardware profile the settings were measured on, e.g. `cpu`. */
  readonly profile: string;
  /** Tuned settings by model id. */
  readonly models: ReadonlyMap<string, ServingDefaults>;
}

/** Where a catalog's tuned settings came from, as services report it. */
export interface BundleSource {
  readonly profile: string;
  readonly path: string;
}

const BUNDLE_KEYS = ["profile", "description", "measured", "models"];
const MODEL_KEYS = ["serving", "tuning"];

/** Validates a parsed bundle document. */
export function compileBundle(raw: unknown, where = "bundle"): ConfigBundle {
  const doc = object(raw, where);
  for (const key of Object.keys(doc)) {
    if (!BUNDLE_KEYS.includes(key)) {
      throw new ConfigError(`${where}.${key} is not a bundle field (${BUNDLE_KEYS.join(", ")})`);
    }
  }
  const profile = doc["profile"];
  if (typeof profile !== "string" || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(profile)) {
    throw new ConfigError(`${where}.profile must be a lower-case name such as "cpu"`);
  }
  const models = new Map<string, ServingDefaults>();
  for (const [id, entry] of Object.entries(object(doc["models"], `${where}.models`))) {
    const at = `${where}.models["${id}"]`;
    const fields = object(entry, at);
    for (const key of Object.keys(fields)) {
      if (!MODEL_KEYS.includes(key)) {
        throw new ConfigError(
          `${at}.${key} is not a bundle model field (${MODEL_KEYS.join(", ")})`,
        );
      }
    }
    models.set(id, compileServing(fields["serving"] ?? {}, `${at}.serving`));
  }
  return { profile, models };
}

/** Reads and validates a bundle file. */
export async function loadBundle(path: string): Promise<ConfigBundle> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, "utf8"));
  } catch (cause) {
    throw new ConfigError(`bundle ${path}: cannot read JSON`, { cause });
  }
  return compileBundle(raw, `bundle ${path}`);
}

function object(raw: unknown, where: string): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where} must be an object`);
  }
  return raw as Record<string, unknown>;
}
