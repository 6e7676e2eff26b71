import { readFile } from "node:fs/promises";
import { createSecureContext } from "node:tls";
import { ConfigError } from "@shoal/config";
import { envOptional } from "@shoal/process";

/**
 * The certificate chain and key ingress serves TLS with: `SHOAL_TLS_CERT` and `SHOAL_TLS_KEY`,
 * PEM files, both or neither (neither: cleartext). Read and checked at start, so a missing
 * file, a key that does not match the certificate or a garbled PEM stops the start with a
 * message naming the variable rather than failing every handshake later.
 *
 * @throws ConfigError
 */
export async function tlsFromEnv(
  env: NodeJS.ProcessEnv,
): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  const certPath = envOptional(env, "SHOAL_TLS_CERT");
  const keyPath = envOptional(env, "SHOAL_TLS_KEY");
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (certPath === undefined || keyPath === undefined) {
    throw new ConfigError("set both SHOAL_TLS_CERT and SHOAL_TLS_KEY, or neither");
  }
  const read = async (variable: string, path: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (cause) {
      throw new ConfigError(`${variable}: cannot read ${path}`, { cause });
    }
  };
  const tls = {
    cert: await read("SHOAL_TLS_CERT", certPath),
    key: await read("SHOAL_TLS_KEY", keyPath),
  };
  try {
    createSecureContext(tls);
  } catch (cause) {
    throw new ConfigError(
      `SHOAL_TLS_CERT/SHOAL_TLS_KEY: not a PEM certificate and its key (${(cause as Error).message})`,
      { cause },
    );
  }
  return tls;
}
