import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot, tempDir } from "@shoal/testing";
import { beforeAll, expect, it } from "vitest";
import { benchFairness, FAIRNESS_DEFAULTS } from "./fairness.js";

// The tenants issue's fairness line, on a real cluster with API keys: tenant A floods at ten
// times its request quota while tenant B sends a steady load. B's requests all succeed and its
// p99 stays within twice its p99 alone; A is refused with 429 and Retry-After. Shorter phases
// than the bench's (`npm run bench -- --scenario fairness`), the same design.

const QUOTA_RPS = 10;

beforeAll(async () => {
  // The compiled open-loop generator; a second or so when it is built already.
  await promisify(execFile)("bash", [join(repoRoot(), "tools", "setup", "openloop.sh")]);
}, 300_000);

it("keeps a steady tenant's p99 within 2x while another floods at 10x its quota", async () => {
  // A smaller quota than the bench's: the flood is still ten times it, and refusing it costs
  // the two cores the test shares with the rest of the suite less.
  const result = await benchFairness({
    ...FAIRNESS_DEFAULTS,
    out: await tempDir("fairness"),
    quotaRps: QUOTA_RPS,
    seconds: 10,
    warmupSeconds: 2,
    compareUnlimited: false,
  });
  const { steady, flood } = result.quota;
  const summary = JSON.stringify(result, null, 2);
  expect(result.alone.steady.failed, summary).toBe(0);
  expect(steady.failed, summary).toBe(0);
  expect(steady.answered, summary).toBe(steady.sent);
  expect(result.steady_p99_ratio, summary).toBeLessThanOrEqual(2);
  // A: every refusal a 429 that says when to come back, and about its quota answered.
  const refused = flood?.failed_by["http 429"] ?? 0;
  expect(refused, summary).toBeGreaterThan(0);
  expect(flood?.failed, summary).toBe(refused);
  expect(flood?.retry_after, summary).toBe(refused);
  const quotaAnswers = QUOTA_RPS * 10;
  expect(flood?.answered, summary).toBeGreaterThan(quotaAnswers * 0.8);
  expect(flood?.answered, summary).toBeLessThan(quotaAnswers * 1.2 + QUOTA_RPS);
}, 180_000);
