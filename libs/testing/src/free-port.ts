import { createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: the OS picks it for a throwaway listener,
 * which is closed before returning. Another process may still take it before the caller binds,
 * so callers that spawn a server on it should retry on "address in use".
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === "object") resolve(address.port);
        else reject(new Error("freePort: listener reported no TCP address"));
      });
    });
  });
}
