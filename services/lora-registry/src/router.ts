import type { IncomingMessage, ServerResponse } from "node:http";
import { BadRequestError, MethodNotAllowedError, NotFoundError } from "./errors.js";

/** A matched request: its URL, and the decoded `{param}` segments of its route. */
export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
}

export type RouteHandler = (context: RouteContext) => Promise<void>;

interface Route {
  readonly method: string;
  readonly segments: readonly string[];
  readonly handler: RouteHandler;
}

/**
 * Method and path routing for a handful of JSON routes. Patterns are literal segments and
 * `{name}` parameters; a parameter matches one segment, percent-decoded after the path is
 * split, so `HuggingFaceTB%2FSmolLM2-135M-Instruct` arrives as one id with its `/`.
 */
export class Router {
  readonly #routes: Route[] = [];

  add(method: string, pattern: string, handler: RouteHandler): this {
    this.#routes.push({ method, segments: split(pattern), handler });
    return this;
  }

  /**
   * The handler for a request, bound to its parameters.
   *
   * @throws NotFoundError when no route has this path.
   * @throws MethodNotAllowedError when routes have the path but not the method.
   * @throws BadRequestError when a segment is not valid percent-encoding.
   */
  match(req: IncomingMessage, res: ServerResponse): () => Promise<void> {
    const url = new URL(req.url ?? "/", "http://registry");
    const segments = split(url.pathname);
    const allowed: string[] = [];
    for (const route of this.#routes) {
      const params = bind(route.segments, segments);
      if (params === undefined) continue;
      if (route.method !== req.method) {
        allowed.push(route.method);
        continue;
      }
      return () => route.handler({ req, res, url, params });
    }
    if (allowed.length > 0) throw new MethodNotAllowedError(allowed);
    throw new NotFoundError(`no route for ${url.pathname}`);
  }
}

function split(path: string): string[] {
  return path.split("/").filter((segment) => segment !== "");
}

function bind(
  pattern: readonly string[],
  segments: readonly string[],
): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i] as string;
    const got = segments[i] as string;
    if (want.startsWith("{") && want.endsWith("}")) {
      try {
        params[want.slice(1, -1)] = decodeURIComponent(got);
      } catch {
        throw new BadRequestError(`path segment ${got} is not valid percent-encoding`);
      }
    } else if (want !== got) {
      return undefined;
    }
  }
  return params;
}
