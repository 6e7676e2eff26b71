import { createServer as createHttp1, type RequestListener } from "node:http";
import {
  createServer as createHttp2,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from "node:http2";
import { createServer as createTcp, type AddressInfo, type Socket } from "node:net";

export type DualHandler = (
  req: Parameters<RequestListener>[0] | Http2ServerRequest,
  res: Parameters<RequestListener>[1] | Http2ServerResponse,
) => void;

export interface DualServer {
  readonly port: number;
  /**
   * Stops accepting, closes idle connections at once, lets requests in progress finish for up
   * to `graceMs`, then destroys what is left.
   */
  close(graceMs: number): Promise<void>;
}

export interface DualListenOptions {
  /**
   * How long a new connection may stay silent before its first bytes: one that never speaks
   * (or hangs up without a byte) would otherwise hold a socket, and the server's close, for
   * ever. @default 30 s
   */
  readonly firstBytesTimeoutMs?: number;
}

/**
 * One plaintext port for every client: HTTP/1.1 (curl, OpenAI SDKs, Connect and gRPC-Web) and
 * HTTP/2 with prior knowledge (gRPC, Connect over h2). Node cannot serve both on one cleartext
 * server, so the first bytes of each connection pick the server: only HTTP/2's connection
 * preface (RFC 9113 §3.4) starts with "PRI", which is no HTTP/1.1 method.
 */
export function listenDual(
  handler: DualHandler,
  port: number,
  host: string,
  options: DualListenOptions = {},
): Promise<DualServer> {
  const firstBytesTimeoutMs = options.firstBytesTimeoutMs ?? 30_000;
  // Connections whose first bytes have not come yet: no protocol owns them.
  const unrouted = new Set<Socket>();
  // Requests in progress per HTTP/1.1 connection; HTTP/2 connections are closed per session.
  const active = new Map<Socket, number>();
  const h2Sockets = new Set<Socket>();
  const sessions = new Set<ServerHttp2Session>();
  let closing = false;

  const tracked: DualHandler = (req, res) => {
    if (req.httpVersionMajor === 1) {
      const socket = req.socket as Socket;
      active.set(socket, (active.get(socket) ?? 0) + 1);
      res.once("close", () => {
        const left = (active.get(socket) ?? 1) - 1;
        active.set(socket, left);
        if (closing && left === 0) socket.destroy();
      });
    }
    handler(req, res);
  };
  const http1 = createHttp1({ keepAliveTimeout: 65_000 }, tracked as RequestListener);
  // A client may send its whole request and then close its sending side (`shutdown(SHUT_WR)`,
  // `curl` with some proxies, `nc -N`): it still waits for the answer. Node's HTTP server
  // otherwise aborts the request and ends the socket on the client's FIN; this (undocumented,
  // long-standing) switch of Node's HTTP server makes it finish the answers first.
  (http1 as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  const http2 = createHttp2(
    {},
    tracked as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
  );
  http2.on("session", (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const tcp = createTcp({ allowHalfOpen: true }, (socket: Socket) => {
    unrouted.add(socket);
    socket.once("close", () => {
      unrouted.delete(socket);
      active.delete(socket);
      h2Sockets.delete(socket);
    });
    socket.on("error", () => socket.destroy());
    socket.setTimeout(firstBytesTimeoutMs, () => socket.destroy());
    // Half-open sockets are allowed for the protocols' sake, so a client that hangs up before
    // its first byte is closed here.
    socket.once("end", () => {
      if (unrouted.has(socket)) socket.destroy();
    });
    const route = (): void => {
      const head = socket.read() as Buffer | null;
      if (head === null) {
        socket.once("readable", route);
        return;
      }
      unrouted.delete(socket);
      socket.setTimeout(0);
      socket.unshift(head);
      if (head.subarray(0, 3).toString("latin1") === "PRI") {
        h2Sockets.add(socket);
        http2.emit("connection", socket);
      } else {
        active.set(socket, 0);
        http1.emit("connection", socket);
      }
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
          closing = true;
          const closed = new Promise<void>((r) => {
            tcp.close(() => {
              r();
            });
          });
          // HTTP/2 clients get GOAWAY and finish their streams; idle HTTP/1.1 connections go now,
          // busy ones right after their response.
          for (const session of sessions) session.close();
          for (const socket of unrouted) socket.destroy();
          for (const [socket, requests] of active) if (requests === 0) socket.destroy();
          const deadline = setTimeout(() => {
            for (const socket of [...active.keys(), ...h2Sockets]) socket.destroy();
          }, graceMs);
          await closed;
          clearTimeout(deadline);
        },
      });
    });
  });
}
