import { createServer as createHttp1, type RequestListener } from "node:http";
import {
  createSecureServer as createSecureHttp2,
  createServer as createHttp2,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from "node:http2";
import { createServer as createTcp, type AddressInfo, type Server, type Socket } from "node:net";
import type { SecureContextOptions, TLSSocket } from "node:tls";

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
   * ever (with TLS: complete its handshake). @default 30 s
   */
  readonly firstBytesTimeoutMs?: number;
  /**
   * Serve TLS with this certificate and key: HTTP/2 and HTTP/1.1 chosen by ALPN, as gRPC,
   * browsers and the OpenAI SDKs negotiate them. Without, the port is cleartext (HTTP/1.1 and
   * h2c).
   */
  readonly tls?: SecureContextOptions;
}

/**
 * One port for every client: HTTP/1.1 (curl, OpenAI SDKs, Connect and gRPC-Web) and HTTP/2
 * (gRPC, Connect over h2). In cleartext Node cannot serve both on one server, so the first
 * bytes of each connection pick the server: only HTTP/2's connection preface (RFC 9113 §3.4)
 * starts with "PRI", which is no HTTP/1.1 method. With `tls`, Node's secure HTTP/2 server
 * takes both, as the handshake's ALPN decides.
 */
export function listenDual(
  handler: DualHandler,
  port: number,
  host: string,
  options: DualListenOptions = {},
): Promise<DualServer> {
  const firstBytesTimeoutMs = options.firstBytesTimeoutMs ?? 30_000;
  if (options.tls !== undefined) {
    return listenTls(handler, port, host, options.tls, firstBytesTimeoutMs);
  }
  // Connections whose first bytes have not come yet: no protocol owns them.
  const unrouted = new Set<Socket>();
  // Requests in progress per HTTP/1.1 connection; HTTP/2 connections are closed per session.
  const active = new Map<Socket, number>();
  const h2Sockets = new Set<Socket>();
  const sessions = new Set<ServerHttp2Session>();
  let closing = false;

  const tracked = countingRequests(handler, active, () => closing);
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
  return listening(tcp, port, host, async (graceMs, closed) => {
    closing = true;
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
  });
}

/**
 * The TLS port: one secure HTTP/2 server that falls back to HTTP/1.1 when ALPN agreed on it,
 * with the same shutdown as the cleartext port: HTTP/2 sessions get GOAWAY, idle HTTP/1.1
 * connections close at once and busy ones after their response, and whatever is left when
 * the grace period ends is destroyed.
 */
function listenTls(
  handler: DualHandler,
  port: number,
  host: string,
  tls: SecureContextOptions,
  handshakeTimeoutMs: number,
): Promise<DualServer> {
  // Requests in progress per HTTP/1.1 connection (its TLS socket); every raw connection, for
  // the deadline.
  const active = new Map<Socket, number>();
  const sessions = new Set<ServerHttp2Session>();
  const connections = new Set<Socket>();
  let closing = false;
  const server = createSecureHttp2(
    { ...tls, allowHTTP1: true, handshakeTimeout: handshakeTimeoutMs },
    countingRequests(handler, active, () => closing) as (
      req: Http2ServerRequest,
      res: Http2ServerResponse,
    ) => void,
  );
  server.on("connection", (socket: Socket) => {
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
  });
  server.on("secureConnection", (socket: TLSSocket) => {
    if (socket.alpnProtocol === "h2") return;
    active.set(socket, active.get(socket) ?? 0);
    socket.once("close", () => active.delete(socket));
  });
  server.on("session", (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  return listening(server, port, host, async (graceMs, closed) => {
    closing = true;
    for (const session of sessions) session.close();
    for (const [socket, requests] of active) if (requests === 0) socket.destroy();
    const deadline = setTimeout(() => {
      for (const socket of connections) socket.destroy();
    }, graceMs);
    await closed;
    clearTimeout(deadline);
  });
}

/**
 * Listens on `port` and resolves with the server's port and its close: `drain` gets the grace
 * period and the promise of the server's own close, and ends the connections it holds.
 */
function listening(
  server: Server,
  port: number,
  host: string,
  drain: (graceMs: number, closed: Promise<void>) => Promise<void>,
): Promise<DualServer> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: (graceMs) =>
          drain(
            graceMs,
            new Promise<void>((r) => {
              server.close(() => {
                r();
              });
            }),
          ),
      });
    });
  });
}

/**
 * `handler`, counting the requests in progress on each HTTP/1.1 connection in `active`, so a
 * shutdown can close idle connections at once and busy ones right after their response.
 */
function countingRequests(
  handler: DualHandler,
  active: Map<Socket, number>,
  closing: () => boolean,
): DualHandler {
  return (req, res) => {
    if (req.httpVersionMajor === 1) {
      const socket = req.socket as Socket;
      active.set(socket, (active.get(socket) ?? 0) + 1);
      res.once("close", () => {
        const left = (active.get(socket) ?? 1) - 1;
        active.set(socket, left);
        if (closing() && left === 0) socket.destroy();
      });
    }
    handler(req, res);
  };
}
