import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { metricSum } from "./metric-sum.js";

const TEXT = `# HELP shoal_loader_loads_total Loads.
# TYPE shoal_loader_loads_total counter
shoal_loader_loads_total{model="a",reason="demand",outcome="ok"} 3
shoal_loader_loads_total{model="b",reason="spare",outcome="ok"} 2
shoal_loader_loads_total{model="b",reason="demand",outcome="oom"} 7
shoal_loader_loads_total_created 5
shoal_loader_unloads_total 4
`;

let server: ReturnType<typeof createServer>;
let port: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/metrics") res.end(TEXT);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  server.close();
});

it("sums a counter's series, all of them or those with a label, and nothing else", async () => {
  expect(await metricSum(port, "shoal_loader_loads_total")).toBe(12);
  expect(await metricSum(port, "shoal_loader_loads_total", 'outcome="ok"')).toBe(5);
  expect(await metricSum(port, "shoal_loader_unloads_total")).toBe(4);
  expect(await metricSum(port, "shoal_absent_total")).toBe(0);
});
