import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/** Replaces the normal response for one file; `path` is the file's path on disk. */
export type FileHandler = (req: IncomingMessage, res: ServerResponse, path: string) => void;

export interface ModelServerOptions {
  /** Directory whose files are served. */
  readonly root: string;
  /**
   * URL path in front of each file, e.g. `/org/model/resolve/main`.
   * @default ""
   */
  readonly prefix?: string;
  /**
   * When set, a request under `prefix` is answered with a 302 to `<redirectTo>/<file>`, as the
   * hub does to send clients to its CDN. A path (`/cdn`) stays on this server; a full URL
   * goes to another origin.
   */
  readonly redirectTo?: string;
  /** Also serve files under `/cdn/`, without the token check. @default false */
  readonly cdn?: boolean;
  /** When set, requests under `prefix` without `Authorization: Bearer <token>` get a 401. */
  readonly token?: string;
  /** Files answered with 404 although they exist. */
  readonly hide?: readonly string[];
  readonly handlers?: Readonly<Record<string, FileHandler>>;
}

export interface ServedRequest {
  /** The path as decoded for routing. */
  readonly path: string;
  /** The path exactly as it arrived, percent-escapes included. */
  readonly rawPath: string;
  readonly authorization: string | undefined;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: ServedRequest[];
  /** How many requests asked for `path`. */
  count(path: string): number;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 and a random port serving model files from `root`. */
export async function startModelServer(options: ModelServerOptions): Promise<ModelServer> {
  const prefix = options.prefix ?? "";
  const requests: ServedRequest[] = [];
  const server = createServer((req, res) => {
    const rawPath = new URL(req.url ?? "/", "http://x").pathname;
    const path = decodeURIComponent(rawPath);
    requests.push({ path, rawPath, authorization: req.headers.authorization });
    let file: string;
    if (path.startsWith(`${prefix}/`)) {
      if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) {
        res.writeHead(401).end("unauthorized");
        return;
      }
      file = path.slice(prefix.length + 1);
      if (options.redirectTo !== undefined) {
        res.writeHead(302, { location: `${options.redirectTo}/${file}` }).end();
        return;
      }
    } else if (options.cdn === true && path.startsWith("/cdn/")) {
      file = path.slice("/cdn/".length);
    } else {
      res.writeHead(404).end();
      return;
    }
    void serveFile(req, res, file, options);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    count: (path) => requests.filter((request) => request.path === path).length,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => {
          if (error === undefined) resolve();
          else reject(error);
        });
      }),
  };
}

async function serveFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: string,
  options: ModelServerOptions,
): Promise<void> {
  const path = join(options.root, file);
  const handler = options.handlers?.[file];
  if (handler !== undefined) {
    handler(req, res, path);
    return;
  }
  if (file.includes("..") || options.hide?.includes(file) === true) {
    res.writeHead(404).end();
    return;
  }
  try {
    const info = await stat(path);
    res.writeHead(200, { "content-length": info.size, "content-type": "application/octet-stream" });
    createReadStream(path).pipe(res);
  } catch {
    res.writeHead(404).end();
  }
}
