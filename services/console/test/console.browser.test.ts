import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { chromiumBinary } from "@shoal/testing";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { GB, simModel, startFleetCluster, type FleetCluster } from "./fleet-cluster.js";

// The console in a real headless Chromium against the real cluster: a model-loader placing
// three simulated models on two simulated accelerators, ingress, the console. Every check
// reads what the page shows (its DOM), and compares it with what the services themselves say.
// Screenshots of each view go to test-output/ (docs/console.md shows them).

const PINNED_A = "sim/pinned-a";
const PINNED_B = "sim/pinned-b";
/** Not pinned: loaded on demand, and its loads take 3 s on the simulated device. */
const COLD = "sim/cold";
const OUTPUT = join(import.meta.dirname, "..", "test-output");

let cluster: FleetCluster;
let browser: Browser;
let page: Page;
/** Every URL the page asked for: all must be the console's own. */
const requested: string[] = [];

beforeAll(async () => {
  await mkdir(OUTPUT, { recursive: true });
  cluster = await startFleetCluster({
    models: [
      simModel(PINNED_A, "pinned-a", { pinned: true, bytes: 2 * GB }),
      simModel(PINNED_B, "pinned-b", { pinned: true, bytes: 2 * GB }),
      simModel(COLD, "cold", { pinned: false, bytes: 1 * GB, loadMs: 3_000 }),
    ],
    workers: 2,
    capacityBytes: 5 * GB,
  });
  browser = await puppeteer.launch({
    executablePath: chromiumBinary(),
    headless: true,
    // Root in a container has no user namespaces for Chromium's sandbox.
    args: ["--no-sandbox", "--disable-gpu"],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1366, height: 800 });
  page.on("request", (req) => requested.push(req.url()));
  await page.goto(`${cluster.consoleUrl}/#fleet`);
}, 240_000);

afterAll(async () => {
  await browser.close();
  await cluster.stop();
}, 60_000);

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(OUTPUT, `${name}.png`) });
}

/** What the fleet view shows: worker → model id → state. */
async function shownFleet(): Promise<Record<string, Record<string, string>>> {
  return page.$$eval("[data-worker]", (cards) =>
    Object.fromEntries(
      cards.map((card) => [
        card.getAttribute("data-worker") ?? "",
        Object.fromEntries(
          [...card.querySelectorAll("li[data-model]")].map((li) => [
            li.getAttribute("data-model") ?? "",
            li.getAttribute("data-state") ?? "",
          ]),
        ),
      ]),
    ),
  );
}

/** What the model-loader's own API says each worker holds: worker → model id → state. */
async function loaderFleet(): Promise<Record<string, Record<string, string>>> {
  const ids: Record<string, string> = { "pinned-a": PINNED_A, "pinned-b": PINNED_B, cold: COLD };
  const res = await fetch(`${cluster.loaderUrl}/v1/residency`);
  const body = (await res.json()) as {
    workers: { worker: string; replicas: { model: string; state: string }[] }[];
  };
  return Object.fromEntries(
    body.workers.map((w) => [
      w.worker,
      Object.fromEntries(w.replicas.map((r) => [ids[r.model] ?? r.model, r.state])),
    ]),
  );
}

async function view(name: string): Promise<void> {
  await page.goto(`${cluster.consoleUrl}/#${name}`);
  await page.waitForSelector(`#${name}:not([hidden]) > *`);
}

async function embed(model: string, text: string): Promise<number> {
  const res = await fetch(`${cluster.ingressUrl}/v1/embeddings`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, input: [text] }),
  });
  await res.arrayBuffer();
  return res.status;
}

it("shows each accelerator with the models the model-loader placed on it", async () => {
  // Both pinned models resident somewhere, as the loader reports it.
  await expect
    .poll(
      async () =>
        Object.values(await loaderFleet()).flatMap((m) =>
          Object.entries(m).filter(([, s]) => s === "resident"),
        ).length,
      { timeout: 60_000, interval: 500 },
    )
    .toBe(2);
  const truth = await loaderFleet();
  await expect.poll(shownFleet, { timeout: 15_000, interval: 250 }).toEqual(truth);
  expect(Object.keys(truth).sort()).toEqual(["gpu1", "gpu2"]);
  // Each card's memory bar is labelled with what it holds against the accelerator's size.
  const labels = await page.$$eval("[data-worker] .membar", (bars) =>
    bars.map((b) => b.getAttribute("aria-label") ?? ""),
  );
  expect(labels).toHaveLength(2);
  // 5 GB accelerators, less the model-loader's default 10 % headroom.
  for (const label of labels) expect(label).toMatch(/of 4\.7 GiB used, .* free, 477 MiB headroom$/);
  const pinned = await page.$$eval("li[data-model] .tag.pinned", (tags) => tags.length);
  expect(pinned).toBe(2);
  await shot("fleet");
}, 120_000);

it("shows a cold model loading, then resident, after a request for it", async () => {
  const answered = embed(COLD, "wake the cold model");
  await page.waitForSelector(`li[data-model="${COLD}"][data-state="loading"]`, {
    timeout: 15_000,
  });
  await shot("fleet-loading");
  await page.waitForSelector(`li[data-model="${COLD}"][data-state="resident"]`, {
    timeout: 30_000,
  });
  expect(await answered).toBe(200);
  await expect.poll(shownFleet, { timeout: 15_000, interval: 250 }).toEqual(await loaderFleet());
  await view("models");
  // The load is in the event list, with its duration (at least the simulated 3 s).
  const loaded = await page.$$eval("#models tr", (rows) =>
    rows.map((r) => r.textContent).filter((t) => t.includes("sim/cold") && t.includes("loaded in")),
  );
  expect(loaded.length).toBeGreaterThan(0);
  const seconds = Number(/loaded in ([\d.]+) s/.exec(loaded[0] ?? "")?.[1]);
  expect(seconds).toBeGreaterThanOrEqual(3);
}, 90_000);

it("lists each base model's adapters with their versions, owner and the tenants shared with", async () => {
  // Written into the adapter index (bucket, `<base key>.<name>` key, JSON record) as the
  // registry writes it; the console only reads it.
  const nc = await connect({ servers: cluster.nats.url });
  try {
    const kv = await new Kvm(nc).create("shoal-adapter-index", { history: 1 });
    const version = (n: number) => ({
      version: n,
      files: {
        config: { sha256: "0".repeat(64), bytes: 1 },
        weights: { sha256: "1".repeat(64), bytes: 1 },
      },
      createdAt: "2026-12-07T00:00:00Z",
    });
    const record = {
      base: PINNED_A,
      baseKey: "pinned-a",
      name: "support-bot",
      owner: "acme",
      sharedWith: ["beta"],
      versions: [version(1), version(2)],
      lastVersion: 2,
      createdAt: "2026-12-07T00:00:00Z",
    };
    const key = "pinned-a.support-bot";
    await kv.put(key, JSON.stringify(record));
    await view("models");
    const adapters = async (): Promise<string> =>
      page.$eval(`tr[data-catalog="${PINNED_A}"] td:last-child`, (td) => td.textContent);
    await expect
      .poll(adapters, { timeout: 15_000, interval: 250 })
      .toBe("support-bot v1,2 · acme + beta");
    await shot("models");
    await kv.delete(key);
    await expect.poll(adapters, { timeout: 10_000, interval: 250 }).toBe("–");
  } finally {
    await nc.close();
  }
}, 40_000);

it("shows a paused worker's queue growing", async () => {
  const holder = Object.entries(await loaderFleet()).find(
    ([, models]) => models[PINNED_A] === "resident",
  )?.[0];
  expect(holder).toBeDefined();
  const worker = cluster.workers[Number(holder?.slice(3)) - 1];
  if (worker === undefined) throw new Error(`no process for ${holder}`);
  await view("queues");
  const depth = async (): Promise<number> =>
    Number(
      await page.$eval(`tr[data-queue="${PINNED_A}"]`, (row) => row.getAttribute("data-depth")),
    );
  expect(await depth()).toBe(0);
  process.kill(worker.pid, "SIGSTOP");
  const answers: Promise<number>[] = [];
  try {
    // One request every 100 ms: each its own queued message, none answered while paused.
    const seen: number[] = [];
    for (let i = 0; i < 40; i++) {
      answers.push(embed(PINNED_A, `queued while paused ${i}`));
      await new Promise((r) => setTimeout(r, 100));
      if (i % 10 === 9) seen.push(await depth());
    }
    await expect.poll(depth, { timeout: 5_000, interval: 200 }).toBeGreaterThanOrEqual(20);
    seen.push(await depth());
    await shot("queues");
    // Rising on screen while the worker is paused.
    expect(seen.at(-1)).toBeGreaterThan(seen[0] ?? 0);
    expect(seen.every((d, i) => i === 0 || d >= (seen[i - 1] ?? 0))).toBe(true);
  } finally {
    process.kill(worker.pid, "SIGCONT");
  }
  // Nothing was lost: every request is answered once the worker runs again.
  expect(await Promise.all(answers)).toEqual(answers.map(() => 200));
  await expect.poll(depth, { timeout: 20_000, interval: 250 }).toBe(0);
}, 120_000);

it("shows latency percentiles per phase from ingress's metrics", async () => {
  await view("requests");
  await expect
    .poll(
      async () => Number(await page.$eval('tr[data-phase="total"] td', (td) => td.textContent)),
      { timeout: 10_000, interval: 250 },
    )
    .toBeGreaterThanOrEqual(41);
  // The paused requests waited seconds in the queue: its p99 says so.
  const queueP99 = await page.$eval(
    'tr[data-phase="queue"] td:nth-of-type(4)',
    (td) => td.textContent,
  );
  expect(Number(queueP99)).toBeGreaterThanOrEqual(1_000);
  const pinnedA = await page.$eval(
    `tr[data-latency-model="${PINNED_A}"] td`,
    (td) => td.textContent,
  );
  expect(Number(pinnedA)).toBeGreaterThanOrEqual(40);
  // Every request was traced: the slowest are listed, each linked to its trace in Jaeger.
  const links = await page.waitForFunction(
    () => {
      const hrefs = [...document.querySelectorAll<HTMLAnchorElement>("ol.slow a")].map(
        (a) => a.href,
      );
      return hrefs.length > 0 ? hrefs : false;
    },
    { timeout: 20_000, polling: 250 },
  );
  const hrefs = (await links.jsonValue()) || [];
  expect(hrefs.length).toBeGreaterThan(0);
  const traceId = /\/trace\/([0-9a-f]{32})$/.exec(hrefs[0] ?? "")?.[1];
  expect(traceId).toBeDefined();
  const spans = await cluster.jaeger.query.trace(traceId ?? "");
  const root = spans.find((sp) => sp.parentSpanId === "");
  // The slowest waited seconds (for the cold load, or in the paused worker's queue).
  expect(((root?.endUs ?? 0) - (root?.startUs ?? 0)) / 1000).toBeGreaterThan(1_000);
  await shot("requests");
}, 40_000);

it("lists the bench results it finds with their charts", async () => {
  await view("benchmarks");
  const results = await page.$$eval("[data-bench]", (items) => items.length);
  expect(results).toBeGreaterThan(0);
  const charts = await page.$$eval("[data-bench] img", (imgs) => imgs.map((img) => img.src));
  expect(charts.length).toBeGreaterThan(0);
  const res = await fetch(charts[0] ?? "");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("image/svg+xml");
  await page.waitForFunction(() =>
    [...document.querySelectorAll("[data-bench] img")].some(
      (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0,
    ),
  );
  await shot("benchmarks");
}, 30_000);

it("shows a lost NATS connection, and clears it when NATS is back", async () => {
  await view("fleet");
  await cluster.nats.restart({
    whileDown: async () => {
      await page.waitForSelector('#banner:not([hidden])[data-reason="nats"]', { timeout: 15_000 });
      await page.waitForSelector('[data-source="nats"][data-state="down"]');
      expect(await page.$eval("#banner", (b) => b.textContent)).toMatch(/NATS is unreachable/);
      await shot("nats-down");
    },
  });
  await page.waitForSelector("#banner[hidden]", { timeout: 30_000 });
  await page.waitForSelector('[data-source="nats"][data-state="ok"]');
  // Heartbeats flow again after the reconnect: the fleet is back, as the loader says.
  await expect.poll(shownFleet, { timeout: 30_000, interval: 500 }).toEqual(await loaderFleet());
}, 90_000);

it("shows a model-loader that stopped answering, and clears it when it answers again", async () => {
  await page.waitForSelector('[data-source="loaders"][data-state="ok"]', { timeout: 15_000 });
  process.kill(cluster.loader.pid, "SIGSTOP");
  try {
    await page.waitForSelector('[data-source="loaders"][data-state="down"]', { timeout: 15_000 });
  } finally {
    process.kill(cluster.loader.pid, "SIGCONT");
  }
  await page.waitForSelector('[data-source="loaders"][data-state="ok"]', { timeout: 15_000 });
}, 60_000);

it("is legible in the dark theme and fetched nothing from elsewhere", async () => {
  await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
  await view("fleet");
  const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  expect(background).toBe("rgb(13, 17, 23)");
  await shot("fleet-dark");
  const origin = new URL(cluster.consoleUrl).origin;
  expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([]);
}, 30_000);
