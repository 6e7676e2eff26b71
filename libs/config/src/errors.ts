/** A configuration value that cannot be used; the message names the setting and why. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}
