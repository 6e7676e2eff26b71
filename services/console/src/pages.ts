import { readdir, readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join } from "node:path";
import type { Benchmarks } from "./benchmarks.js";
import type { LivePages } from "./live-pages.js";

/** The console's own files: the page, its scripts and its style, read once at start. */
export type WebFiles = ReadonlyMap<string, { readonly type: string; readonly body: Buffer }>;

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Reads every file of `dir` the console serves (`/` is its index.html). */
export async function loadWebFiles(dir: string): Promise<WebFiles> {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const name of await readdir(dir)) {
    const type = TYPES[extname(name)];
    if (type === undefined) continue;
    const body = await readFile(join(dir, name));
    files.set(name === "index.html" ? "/" : `/${name}`, { type, body });
  }
  return files;
}

/**
 * Everything the page loads comes from this server: scripts, style, data and the bench
 * charts (shown as images, which cannot run scripts). Nothing is fetched from elsewhere.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

export interface PageDeps {
  readonly web: WebFiles;
  readonly live: LivePages;
  readonly benchmarks: Benchmarks;
  /** The latest snapshot, serialised. */
  snapshot(): string;
}

/**
 * The console's HTTP routes (all read-only, GET or HEAD):
 *
 *   /                   the page
 *   /<file>.js|.css     its scripts and style
 *   /events             server-sent events: a snapshot a second
 *   /api/snapshot       the latest snapshot as JSON
 *   /bench/<n>/<chart>  a chart a bench wrote beside its result
 *   /healthz            "ok" while the process runs
 */
export async function handlePage(
  deps: PageDeps,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    json(
      res,
      405,
      { error: { message: "the console is read-only: only GET and HEAD" } },
      {
        allow: "GET, HEAD",
      },
    );
    return;
  }
  let path: string;
  try {
    path = decodeURIComponent(new URL(req.url ?? "/", "http://console").pathname);
  } catch {
    json(res, 400, { error: { message: "the path is not valid percent-encoding" } });
    return;
  }
  const file = deps.web.get(path);
  if (file !== undefined) {
    send(res, 200, file.type, file.body, { ...SECURITY_HEADERS, "cache-control": "no-cache" });
    return;
  }
  if (path === "/events") {
    if (!deps.live.open(res)) {
      json(
        res,
        503,
        { error: { message: "too many consoles are open; try again later" } },
        {
          "retry-after": "10",
        },
      );
    }
    return;
  }
  if (path === "/api/snapshot") {
    send(res, 200, "application/json", Buffer.from(deps.snapshot()), {
      "cache-control": "no-store",
    });
    return;
  }
  if (path === "/healthz") {
    send(res, 200, "text/plain; charset=utf-8", Buffer.from("ok\n"));
    return;
  }
  if (path.startsWith("/bench/")) {
    const chart = deps.benchmarks.chart(path.slice("/bench/".length));
    if (chart !== undefined) {
      const body = await readFile(chart).catch(() => undefined);
      if (body !== undefined) {
        // Opened on its own, an SVG could run script: the sandbox forbids it.
        send(res, 200, "image/svg+xml", body, {
          "content-security-policy": "sandbox; default-src 'none'; style-src 'unsafe-inline'",
          "x-content-type-options": "nosniff",
        });
        return;
      }
    }
  }
  json(res, 404, {
    error: { message: `no route ${path}`, routes: ["/", "/events", "/api/snapshot", "/healthz"] },
  });
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  send(res, status, "application/json", Buffer.from(JSON.stringify(body)), headers);
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: Buffer,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    "content-type": type,
    "content-length": String(body.byteLength),
    ...headers,
  });
  res.end(res.req.method === "HEAD" ? undefined : body);
}
