import { createServer as createHttp1, type RequestListener } from "node:http";
import {
  createServer as createHttp2,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from "node:http2";
import { createServer as createTcp, type AddressInfo, type Socket } from "node:net";

export type DualHandler = (
  req: Parameters<RequestListener>[0] | Http2ServerRequest,
  res: Parameters<RequestListener>[1] | Http2ServerResponse,
) => void;

export interface DualServer {
  readonly port: number;
  /** Stops accepting, gives open connections `graceMs` to finish, then destroys them. */
  close(graceMs: number): Promise<void>;
}

/**
 * One plaintext port for every client: HTTP/1.1 (curl, OpenAI SDKs, Connect and gRPC-Web) and
 * HTTP/2 with prior knowledge (gRPC, Connect over h2). Node cannot serve both on one cleartext
 * server, so the first bytes of each connection pick the server: only HTTP/2's connection
 * preface (RFC 9113 §3.4) starts with "PRI", which is no HTTP/1.1 method.
 */
export function listenDual(handler: DualHandler, port: number, host: string): Promise<DualServer> {
  const http1 = createHttp1({ keepAliveTimeout: 65_000 }, handler as RequestListener);
  const http2 = createHttp2(
    {},
    handler as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
  );
  const sockets = new Set<Socket>();
  const tcp = createTcp((socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const route = (): void => {
      const head = socket.read() as Buffer | null;
      if (head === null) {
        socket.once("readable", route);
        return;
      }
      socket.unshift(head);
      const target = head.subarray(0, 3).toString("latin1") === "PRI" ? http2 : http1;
      target.emit("connection", socket);
    };
    socket.once("readable", route);
  });
  return new Promise((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(port, host, () => {
      tcp.off("error", reject);
      resolve({
        port: (tcp.address() as AddressInfo).port,
        close: async (graceMs) => {
          const closed = new Promise<void>((r) => {
            tcp.close(() => {
              r();
            });
          });
          http1.closeIdleConnections();
          const deadline = setTimeout(() => {
            for (const s of sockets) s.destroy();
          }, graceMs);
          await closed;
          clearTimeout(deadline);
        },
      });
    });
  });
}
