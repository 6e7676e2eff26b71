import { writeFile } from "node:fs/promises";
import { request, type IncomingMessage } from "node:http";
import { join } from "node:path";
import {
  freePort,
  ManagedProcess,
  repoRoot,
  simEmbeddingEntry,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ConsoleSnapshot } from "../src/snapshot.js";

// The console's HTTP side without a browser: its routes and their refusals, many open pages,
// and a NATS that is away when it starts and comes back.

let nats: NatsServerHandle;
let console: ServiceHandle;
let url: string;
let catalog: string;

beforeAll(async () => {
  nats = await startNatsServer();
  catalog = join(await tempDir("console"), "catalog.json");
  await writeFile(catalog, JSON.stringify({ models: [simEmbeddingEntry("sim/a", "a")] }));
}, 60_000);

afterAll(async () => {
  await console.stop();
  await nats.stop();
});

async function snapshot(): Promise<ConsoleSnapshot> {
  return (await (await fetch(`${url}/api/snapshot`)).json()) as ConsoleSnapshot;
}

it("serves with NATS away at its start, says so, and recovers by itself when NATS comes", async () => {
  await nats.restart({
    whileDown: async () => {
      const port = await freePort();
      console = await startService("console", {
        env: {
          NATS_URL: nats.url,
          SHOAL_CATALOG: catalog,
          SHOAL_CONSOLE_PORT: String(port),
          SHOAL_CONSOLE_MAX_PAGES: "120",
        },
        readyMessage: "console listening",
      });
      url = `http://127.0.0.1:${port}`;
      const page = await fetch(`${url}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("<title>Shoal console</title>");
      await expect
        .poll(async () => (await snapshot()).sources.nats.state, { timeout: 5_000 })
        .toBe("down");
      const s = await snapshot();
      expect(s.sources.metrics.state).toBe("off");
      expect(s.queues.map((q) => q.id)).toEqual(["sim/a"]);
    },
  });
  await expect
    .poll(async () => (await snapshot()).sources.nats.state, { timeout: 20_000, interval: 250 })
    .toBe("ok");
}, 60_000);

it.each([
  ["POST /", "POST", "/", 405],
  ["an unknown route", "GET", "/admin", 404],
  ["a path that is not percent-encoding", "GET", "/%zz", 400],
  ["a chart it never listed", "GET", "/bench/0/..%2F..%2Fetc%2Fpasswd", 404],
  ["a very long path", "GET", `/${"x".repeat(6_000)}`, 404],
])("answers %s with a JSON error", async (_what, method, path, status) => {
  const res = await fetch(`${url}${path}`, { method });
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toBe("application/json");
  const body = (await res.json()) as { error: { message: string } };
  expect(body.error.message.length).toBeGreaterThan(0);
});

it("sends the page with a policy that loads nothing from elsewhere, and HEAD without a body", async () => {
  const res = await fetch(`${url}/`);
  expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
  const head = await fetch(`${url}/app.js`, { method: "HEAD" });
  expect(head.status).toBe(200);
  expect(head.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
  expect(await head.text()).toBe("");
});

/** Opens an event stream; resolves with it once its first snapshot arrived. */
function openPage(): Promise<{ res: IncomingMessage; status: number; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/events`, (res) => {
      const close = (): void => {
        req.destroy();
      };
      if (res.statusCode !== 200) {
        res.resume();
        resolve({ res, status: res.statusCode ?? 0, close });
        return;
      }
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
        if (text.includes("event: snapshot\ndata: {")) {
          res.removeAllListeners("data");
          res.resume();
          resolve({ res, status: 200, close });
        }
      });
    });
    req.on("error", reject);
    req.end();
  });
}

it("feeds a hundred open pages, refuses pages past its limit, and takes new ones as pages close", async () => {
  const pages = await Promise.all(Array.from({ length: 120 }, () => openPage()));
  expect(pages.every((p) => p.status === 200)).toBe(true);
  const refused = await openPage();
  expect(refused.status).toBe(503);
  expect(refused.res.headers["retry-after"]).toBe("10");
  pages[0]?.close();
  await expect.poll(async () => (await openPage()).status, { timeout: 5_000 }).toBe(200);
  for (const p of pages) p.close();
}, 30_000);

it("refuses to show the fleet to a network unless told to, naming the way out", async () => {
  const child = ManagedProcess.spawn(
    process.execPath,
    ["--import", "tsx", join(repoRoot(), "services", "console", "src", "main.ts")],
    {
      env: {
        ...process.env,
        NATS_URL: nats.url,
        SHOAL_CATALOG: catalog,
        SHOAL_CONSOLE_HOST: "0.0.0.0",
      },
      stdin: "ignore",
    },
  );
  const exit = await child.exited;
  expect(exit.code).not.toBe(0);
  expect(child.output()).toContain("set SHOAL_CONSOLE_OPEN=1 to serve that network");
}, 30_000);
