import { execFileSync } from "node:child_process";
import { ManagedProcess } from "@shoal/testing";

/**
 * Hosts on one machine: each a Linux network namespace with one interface, `eth0`, on a
 * private bridge that lives in a namespace of its own (the switch). Nothing is added to the
 * machine's own network: traffic between hosts never leaves the lab, and deleting the
 * namespaces removes every trace. Needs root (CAP_NET_ADMIN) and iproute2.
 *
 * A partition takes a host's port on the switch down: its connections stall as they would
 * behind a failed link, without a reset. Killing a host kills every process in its namespace.
 */
export class Lab {
  readonly #prefix: string;
  readonly #hosts = new Map<string, LabHost>();
  readonly #switch: string;

  private constructor(prefix: string) {
    this.#prefix = prefix;
    this.#switch = `${prefix}-switch`;
  }

  /** A new lab; namespaces left by an earlier run whose process is gone are removed first. */
  static create(): Lab {
    removeAbandonedLabs();
    const lab = new Lab(`${LAB_PREFIX}${process.pid}`);
    ip("netns", "add", lab.#switch);
    ip("-n", lab.#switch, "link", "set", "lo", "up");
    ip("-n", lab.#switch, "link", "add", "br0", "type", "bridge");
    ip("-n", lab.#switch, "link", "set", "br0", "up");
    return lab;
  }

  /** Adds a host named `name` (letters, digits, dashes) with the next address, 10.77.0.<11+>. */
  addHost(name: string): LabHost {
    if (!/^[a-z][a-z0-9-]{0,15}$/.test(name)) throw new Error(`bad host name ${name}`);
    const index = this.#hosts.size;
    const ns = `${this.#prefix}-${name}`;
    const port = `p${index}`;
    const address = `10.77.0.${11 + index}`;
    ip("netns", "add", ns);
    ip(
      "link",
      "add",
      "eth0",
      "netns",
      ns,
      "type",
      "veth",
      "peer",
      "name",
      port,
      "netns",
      this.#switch,
    );
    ip("-n", this.#switch, "link", "set", port, "master", "br0");
    ip("-n", this.#switch, "link", "set", port, "up");
    ip("-n", ns, "addr", "add", `${address}/24`, "dev", "eth0");
    ip("-n", ns, "link", "set", "eth0", "up");
    ip("-n", ns, "link", "set", "lo", "up");
    const host = new LabHost(name, ns, address, port, this.#switch);
    this.#hosts.set(name, host);
    return host;
  }

  host(name: string): LabHost {
    const host = this.#hosts.get(name);
    if (host === undefined) throw new Error(`no host ${name} in the lab`);
    return host;
  }

  /** Kills every process of every host and deletes the namespaces. */
  destroy(): void {
    for (const host of this.#hosts.values()) {
      host.killAll();
      ipQuiet("netns", "del", host.ns);
    }
    ipQuiet("netns", "del", this.#switch);
  }
}

/** One host of a {@link Lab}. */
export class LabHost {
  constructor(
    readonly name: string,
    readonly ns: string,
    readonly address: string,
    readonly switchPort: string,
    readonly switchNs: string,
  ) {}

  /** Starts `command` inside the host; its output is kept by the returned process. */
  spawn(command: string, args: readonly string[], env: NodeJS.ProcessEnv): ManagedProcess {
    return ManagedProcess.spawn("ip", ["netns", "exec", this.ns, command, ...args], {
      env,
      stdin: "ignore",
    });
  }

  /** Runs `command` inside the host to completion; its stdout, or the error with its stderr. */
  run(command: string, args: readonly string[], timeoutMs = 10_000): string {
    return execFileSync("ip", ["netns", "exec", this.ns, command, ...args], {
      encoding: "utf8",
      timeout: timeoutMs,
      stdio: ["ignore", "pipe", "pipe"],
    });
  }

  /** GETs `url` from inside the host: its status (0 when nothing answered) and body. */
  get(url: string, timeoutMs = 3000): { status: number; body: string } {
    try {
      const out = this.run(
        "curl",
        ["-s", "-m", String(timeoutMs / 1000), "-w", "\n%{http_code}", url],
        timeoutMs + 2000,
      );
      const cut = out.lastIndexOf("\n");
      return { status: Number(out.slice(cut + 1)), body: out.slice(0, cut) };
    } catch {
      return { status: 0, body: "" };
    }
  }

  /** Takes the host's link down: it can reach no one and no one it. */
  partition(): void {
    ip("-n", this.switchNs, "link", "set", this.switchPort, "down");
  }

  heal(): void {
    ip("-n", this.switchNs, "link", "set", this.switchPort, "up");
  }

  /** Pids of the processes running in the host. */
  pids(): number[] {
    const out = ipQuiet("netns", "pids", this.ns);
    return out
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map(Number);
  }

  /** SIGKILLs every process in the host at once, as a power cut would. */
  killAll(): void {
    for (const pid of this.pids()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }
}

const LAB_PREFIX = "shoal-lab";

function ip(...args: string[]): string {
  try {
    return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(`ip ${args.join(" ")} failed: ${stderr.trim() || String(err)}`, {
      cause: err,
    });
  }
}

function ipQuiet(...args: string[]): string {
  try {
    return ip(...args);
  } catch {
    return "";
  }
}

/** Deletes the namespaces of labs whose test process died before cleaning up. */
function removeAbandonedLabs(): void {
  const names = ipQuiet("netns", "list")
    .split("\n")
    .map((l) => l.split(" ")[0] ?? "")
    .filter((n) => n.startsWith(LAB_PREFIX));
  for (const ns of names) {
    const owner = Number(/^shoal-lab(\d+)-/.exec(ns)?.[1]);
    if (owner === process.pid || isAlive(owner)) continue;
    for (const pid of ipQuiet("netns", "pids", ns).split("\n").filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    ipQuiet("netns", "del", ns);
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
