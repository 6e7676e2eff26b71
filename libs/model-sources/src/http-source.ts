import type { ModelEntry } from "@shoal/config";
import { ModelSourceError } from "./model-source-error.js";

/** One file's GET: where, and with which headers. */
export interface FileRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** What building hub URLs needs from the compiled options. */
export interface HubSettings {
  readonly hfEndpoint: string;
  readonly hfToken: string | undefined;
}

/** Hub repo ids: `name` or `namespace/name`, each part as the hub allows. */
const HUB_REPO = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/;

/**
 * The request for one model file from an HTTP source:
 * `url` → `GET <baseUrl>/<file>`; `hub` → `GET <HF_ENDPOINT>/<repo>/resolve/<revision>/<file>`,
 * the endpoint the hub's own clients use, which redirects to a CDN for large files.
 *
 * `HF_TOKEN` goes to the hub only. fetch drops `Authorization` when a redirect leaves the
 * origin, so the CDN never sees it either.
 *
 * @throws ModelSourceError (`invalid-source`) for a source that would produce an unsafe URL.
 */
export function fileRequest(entry: ModelEntry, file: string, hub: HubSettings): FileRequest {
  const { source } = entry;
  switch (source.kind) {
    case "url": {
      let base: URL;
      try {
        base = new URL(source.baseUrl);
      } catch (cause) {
        throw invalidSource(entry, `baseUrl "${source.baseUrl}" is not a URL`, cause);
      }
      if (base.protocol !== "http:" && base.protocol !== "https:") {
        throw invalidSource(entry, `baseUrl must be http(s), got ${base.protocol}`);
      }
      return { url: `${source.baseUrl.replace(/\/+$/, "")}/${encodePath(file)}`, headers: {} };
    }
    case "hub": {
      if (!HUB_REPO.test(source.repo) || source.repo.split("/").some((part) => part === "..")) {
        throw invalidSource(entry, `hub repo "${source.repo}" is not a valid repo id`);
      }
      // A revision may be a branch, a tag, a commit or `refs/pr/N`; the hub expects it as one
      // path segment, so its slashes are escaped.
      const url =
        `${hub.hfEndpoint}/${source.repo}/resolve/${encodeURIComponent(source.revision)}/` +
        encodePath(file);
      const headers: Record<string, string> =
        hub.hfToken === undefined ? {} : { authorization: `Bearer ${hub.hfToken}` };
      return { url, headers };
    }
    default:
      throw invalidSource(entry, `source kind ${source.kind} is not fetched over HTTP`);
  }
}

function encodePath(file: string): string {
  return file.split("/").map(encodeURIComponent).join("/");
}

function invalidSource(entry: ModelEntry, detail: string, cause?: unknown): ModelSourceError {
  return new ModelSourceError("invalid-source", detail, { modelId: entry.id, cause });
}
