import { join } from "node:path";
import { trace } from "@opentelemetry/api";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { createLogger } from "@shoal/telemetry";
import { defaultCatalog, repoRoot, startNatsServer, type NatsServerHandle } from "@shoal/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { run, type RunningIngress } from "../src/run.js";

// The standard health protocol through @grpc/grpc-js with a stub loaded from
// proto/grpc/health/v1/health.proto, as a probe or load balancer would. Health depends only on
// ingress and its NATS connection, so no worker runs here.

const INFERENCE = "shoal.inference.v1.InferenceService";

type Status = "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";
interface HealthStub extends grpc.Client {
  Check(
    req: { service: string },
    options: grpc.CallOptions,
    cb: grpc.requestCallback<{ status: Status }>,
  ): grpc.ClientUnaryCall;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status: Status }>;
}

let nats: NatsServerHandle;
let ingress: RunningIngress;
const clients: grpc.Client[] = [];

function startIngress(): Promise<RunningIngress> {
  return run({
    natsServers: nats.url,
    catalog: defaultCatalog(),
    port: 0,
    logger: createLogger({ service: "ingress", level: "error" }),
    tracer: trace.getTracer("test"),
  });
}

function healthStub(port: number): HealthStub {
  const definition = protoLoader.loadSync(
    join(repoRoot(), "proto", "grpc", "health", "v1", "health.proto"),
    { includeDirs: [join(repoRoot(), "proto")], enums: String },
  );
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  const stub = new pkg.grpc.health.v1.Health(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  ) as unknown as HealthStub;
  clients.push(stub);
  return stub;
}

function check(stub: HealthStub, service: string): Promise<Status> {
  return new Promise((resolve, reject) => {
    stub.Check({ service }, { deadline: Date.now() + 5000 }, (err, res) => {
      if (err !== null || res === undefined) reject(err ?? new Error("empty response"));
      else resolve(res.status);
    });
  });
}

/** A Watch call whose messages and end can be awaited one at a time. */
class Watcher {
  readonly #messages: Status[] = [];
  readonly #waiters: (() => void)[] = [];
  readonly call: grpc.ClientReadableStream<{ status: Status }>;
  ended: grpc.StatusObject | undefined;

  constructor(stub: HealthStub, service: string) {
    this.call = stub.Watch({ service });
    this.call.on("data", (res: { status: Status }) => {
      this.#messages.push(res.status);
      this.#wake();
    });
    this.call.on("status", (status: grpc.StatusObject) => {
      this.ended = status;
      this.#wake();
    });
    // Cancelling a call emits an error; its status is what the tests look at.
    this.call.on("error", () => undefined);
  }

  async next(timeoutMs = 10_000): Promise<Status> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = this.#messages.shift();
      if (message !== undefined) return message;
      if (this.ended !== undefined) throw new Error(`Watch ended: ${this.ended.details}`);
      await this.#wait(deadline);
    }
  }

  async end(timeoutMs = 10_000): Promise<grpc.StatusObject> {
    const deadline = Date.now() + timeoutMs;
    while (this.ended === undefined) await this.#wait(deadline);
    return this.ended;
  }

  #wait(deadline: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no Watch message within the time; got so far: ${this.#messages.join()}`));
      }, deadline - Date.now());
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
}

beforeAll(async () => {
  nats = await startNatsServer();
  ingress = await startIngress();
});

afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

afterAll(async () => {
  await ingress.stop();
  await nats.stop();
});

describe("grpc.health.v1.Health", () => {
  it("reports the server and the inference service SERVING", async () => {
    const stub = healthStub(ingress.port);
    expect(await check(stub, "")).toBe("SERVING");
    expect(await check(stub, INFERENCE)).toBe("SERVING");
  });

  it("answers Check for an unknown service with NOT_FOUND", async () => {
    const err = await check(healthStub(ingress.port), "shoal.nope.v1.NopeService").catch(
      (e: unknown) => e,
    );
    expect((err as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    expect((err as grpc.ServiceError).details).toBe('unknown service "shoal.nope.v1.NopeService"');
  });

  it("watches an unknown service as SERVICE_UNKNOWN until the client cancels", async () => {
    const watcher = new Watcher(healthStub(ingress.port), "shoal.nope.v1.NopeService");
    expect(await watcher.next()).toBe("SERVICE_UNKNOWN");
    watcher.call.cancel();
    expect((await watcher.end()).code).toBe(grpc.status.CANCELLED);
  });

  it("watches NOT_SERVING while NATS is away and SERVING once it is back", async () => {
    const stub = healthStub(ingress.port);
    const watcher = new Watcher(stub, INFERENCE);
    const overall = new Watcher(stub, "");
    expect(await watcher.next()).toBe("SERVING");
    expect(await overall.next()).toBe("SERVING");
    await nats.restart({ signal: "SIGKILL" });
    expect(await watcher.next()).toBe("NOT_SERVING");
    expect(await watcher.next()).toBe("SERVING");
    expect(await overall.next()).toBe("NOT_SERVING");
    expect(await overall.next()).toBe("SERVING");
    expect(await check(stub, INFERENCE)).toBe("SERVING");
    watcher.call.cancel();
    overall.call.cancel();
    expect((await watcher.end()).code).toBe(grpc.status.CANCELLED);
  });

  it("watches NOT_SERVING at shutdown, then ends the stream so shutdown need not wait", async () => {
    const second = await startIngress();
    const stub = healthStub(second.port);
    const watcher = new Watcher(stub, INFERENCE);
    expect(await watcher.next()).toBe("SERVING");
    const started = Date.now();
    const stopped = second.stop();
    expect(await watcher.next()).toBe("NOT_SERVING");
    expect((await watcher.end()).code).toBe(grpc.status.OK);
    await stopped;
    // Far below the 10 s grace period an open stream would hold shutdown for.
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
