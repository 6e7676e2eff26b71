import { execFileSync, spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, startNatsServer, tempDir } from "@shoal/testing";
import type { ImageSpec } from "./images.js";

const READY_TIMEOUT_MS = 60_000;

/**
 * Loads each image into a podman store of its own (a temporary one: nothing is left in the
 * machine's) and runs it on the host network beside a real nats-server, as its user, with its
 * entrypoint: a service must answer its health check, a job exit 0. Throws naming the first
 * image that does not, with its output.
 *
 * podman runs with runc, cgroupfs and no ulimits of its own: this machine's hybrid cgroups and
 * missing CAP_SYS_RESOURCE make its defaults (crun, systemd, raising limits) fail.
 */
export async function smokeTest(
  dir: string,
  images: readonly ImageSpec[],
  version: string,
): Promise<void> {
  const home = await tempDir("podman");
  const conf = join(home, "containers.conf");
  await writeFile(
    conf,
    [
      "[containers]",
      // Inherit this process's limits: setting any, even to the same values, is refused here.
      "default_ulimits = []",
      "",
      "[engine]",
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      "",
    ].join("\n"),
  );
  const storage = join(home, "storage.conf");
  await writeFile(
    storage,
    [
      "[storage]",
      'driver = "vfs"',
      `graphroot = "${join(home, "graph")}"`,
      `runroot = "${join(home, "run")}"`,
      "",
    ].join("\n"),
  );
  const env = { ...process.env, CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storage };
  const podman = (args: readonly string[]): string =>
    execFileSync("podman", args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const nats = await startNatsServer();
  try {
    for (const spec of images) {
      const image = `localhost/shoal-${spec.name}:${version}`;
      podman(["load", "-q", "-i", join(dir, `shoal-${spec.name}.tar`)]);
      const user = podman(["image", "inspect", "--format", "{{.Config.User}}", image]).trim();
      if (user !== "10001:10001") throw new Error(`${image} runs as "${user}", not the shoal user`);
      const runEnv: Record<string, string> = { ...spec.smoke.env, NATS_URL: nats.url };
      // Host networking: every port a service listens on is a free one of its own.
      const healthPort = await freePort();
      const otherPort = await freePort();
      runEnv["SHOAL_METRICS_PORT"] = String(healthPort);
      runEnv["SHOAL_PORT"] = String(otherPort);
      runEnv["SHOAL_LOADER_PORT"] = String(otherPort);
      runEnv["SHOAL_REGISTRY_PORT"] = String(otherPort);
      const extra = spec.smoke.args?.(healthPort, otherPort) ?? [];
      const args = [
        "run",
        "--name",
        `shoal-smoke-${spec.name}`,
        "--network",
        "host",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/var/cache/shoal:rw,mode=1777",
        ...Object.entries(runEnv).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
      ];
      if (spec.smoke.check === "exit") {
        const run = spawnSync("podman", [...args, "--rm", image, ...extra], {
          env,
          encoding: "utf8",
        });
        if (run.status !== 0)
          throw new Error(`${image} exited ${run.status}:\n${run.stdout}${run.stderr}`);
        console.log(`[images] shoal-${spec.name}: ran and exited 0`);
        continue;
      }
      podman([...args, "-d", image, ...extra]);
      try {
        const started = Date.now();
        const url = `http://127.0.0.1:${healthPort}${spec.smoke.check.path}`;
        for (;;) {
          const ok = await fetch(url).then(
            (r) => r.status === 200,
            () => false,
          );
          if (ok) break;
          const state = podman([
            "inspect",
            "--format",
            "{{.State.Status}}",
            `shoal-smoke-${spec.name}`,
          ]).trim();
          if (state !== "running" || Date.now() - started > READY_TIMEOUT_MS) {
            const logs = spawnSync("podman", ["logs", `shoal-smoke-${spec.name}`], {
              env,
              encoding: "utf8",
            });
            throw new Error(
              `${image} not healthy at ${url} (${state}):\n${logs.stdout}${logs.stderr}`,
            );
          }
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        console.log(`[images] shoal-${spec.name}: healthy (${url}) in ${Date.now() - started} ms`);
      } finally {
        spawnSync("podman", ["rm", "-f", "-t", "10", `shoal-smoke-${spec.name}`], { env });
      }
    }
  } finally {
    await nats.stop();
    spawnSync("podman", ["system", "reset", "-f"], { env });
  }
}
