import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { natsServerBinary, tempDir } from "@shoal/testing";
import { describe, expect, it } from "vitest";
import { natsAuthSecret } from "./nats-auth-secret.js";
import { NATS_USERS } from "./nats-users.js";

/** The `stringData` of the Secret: every value is written as a JSON string. */
function stringData(yaml: string): Record<string, string> {
  const data: Record<string, string> = {};
  for (const match of yaml.matchAll(/^ {2}([a-z.-]+): (".*")$/gm)) {
    data[match[1] ?? ""] = JSON.parse(match[2] ?? '""') as string;
  }
  return data;
}

describe("natsAuthSecret", () => {
  it("holds a nats-server authorization block it accepts, and each user's own password", async () => {
    const yaml = natsAuthSecret("shoal-nats-auth", "inference");
    expect(yaml).toMatch(/^kind: Secret$/m);
    expect(yaml).toMatch(/^ {2}namespace: inference$/m);
    const data = stringData(yaml);
    expect(Object.keys(data).sort()).toEqual(["auth.conf", ...NATS_USERS].sort());
    const conf = join(await tempDir("nats-secret"), "auth.conf");
    writeFileSync(conf, data["auth.conf"] ?? "");
    const check = spawnSync(natsServerBinary(), ["-t", "-c", conf], { encoding: "utf8" });
    expect(check.stderr + check.stdout).toMatch(/is valid/);
    expect(check.status).toBe(0);
    for (const user of NATS_USERS) {
      expect(data["auth.conf"]).toContain(
        `user: "${user}", password: ${JSON.stringify(data[user])}`,
      );
    }
    expect(stringData(natsAuthSecret("shoal-nats-auth"))["worker"]).not.toBe(data["worker"]);
  });

  it("refuses a name Kubernetes would", () => {
    expect(() => natsAuthSecret("Bad_Name")).toThrow(/not a Kubernetes object name/);
  });
});
