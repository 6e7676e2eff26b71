import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { request, type RequestOptions } from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { connect } from "@nats-io/transport-node";
import { trace } from "@opentelemetry/api";
import { compileCatalog } from "@shoal/config";
import { createLogger } from "@shoal/telemetry";
import {
  repoRoot,
  sidecarBinary,
  simEmbeddingEntry,
  startNatsServer,
  startService,
  tempDir,
  type NatsServerHandle,
  type ServiceHandle,
} from "@shoal/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run, type RunningIngress } from "../src/run.js";
import { tlsFromEnv } from "../src/tls-files.js";
import { inferenceStub } from "./support/grpc-js.js";
import { runPytest } from "./support/pytest.js";

// TLS end to end with certificates tools/certs/make-certs.sh makes: nats-server requires TLS,
// the worker (a process, configured by NATS_CA) and ingress reach it only through its CA;
// ingress serves HTTPS, HTTP/2 and HTTP/1.1 chosen by ALPN, to clients that trust the CA, and
// no client accepts an expired or self-signed certificate.

const MODEL = "shoal/sim-embedding";
const catalogDocument = { models: [simEmbeddingEntry(MODEL, "sim-embedding")] };

let certs: string;
let nats: NatsServerHandle;
let worker: ServiceHandle;
let ingress: RunningIngress;
let ca: Buffer;

const file = (name: string) => join(certs, name);
const logger = createLogger({ service: "ingress", level: "warn" });

async function startIngress(cert: string, key: string): Promise<RunningIngress> {
  return run({
    natsServers: nats.url,
    natsAuth: { caFile: file("ca.crt") },
    catalog: compileCatalog(catalogDocument, { modelsDir: "/unused" }),
    port: 0,
    tls: { cert: await readFile(file(cert)), key: await readFile(file(key)) },
    logger,
    tracer: trace.getTracer("test"),
  });
}

/** One HTTPS/1.1 request to `port`, trusting `trusted`; rejects with the TLS error. */
function https(
  port: number,
  trusted: Buffer,
  body?: unknown,
): Promise<{ status: number; alpn: string | false; body: string }> {
  return new Promise((resolve, reject) => {
    // `https.request` hands ALPNProtocols to `tls.connect`; its type does not list it.
    const options: RequestOptions & { ALPNProtocols: string[] } = {
      host: "127.0.0.1",
      servername: "localhost",
      port,
      ca: trusted,
      ALPNProtocols: ["http/1.1"],
      ...(body === undefined
        ? { method: "GET", path: "/v1/models" }
        : {
            method: "POST",
            path: "/v1/embeddings",
            headers: { "content-type": "application/json" },
          }),
    };
    const req = request(options, (res) => {
      // The socket goes back to the agent once the body is read: ask it now.
      const alpn = (res.socket as { alpnProtocol?: string | false }).alpnProtocol ?? false;
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, alpn, body });
      });
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

beforeAll(async () => {
  certs = await tempDir("certs");
  await promisify(execFile)("bash", [join(repoRoot(), "tools", "certs", "make-certs.sh"), certs]);
  ca = await readFile(file("ca.crt"));
  nats = await startNatsServer({
    args: ["--tls", "--tlscert", file("server.crt"), "--tlskey", file("server.key")],
  });
  const catalogPath = join(certs, "catalog.json");
  await writeFile(catalogPath, JSON.stringify(catalogDocument));
  worker = await startService("worker", {
    env: {
      NATS_URL: nats.url,
      NATS_CA: file("ca.crt"),
      SHOAL_CATALOG: catalogPath,
      SHOAL_SIDECAR_BIN: sidecarBinary(),
      SHOAL_SIDECAR_BACKEND: "sim",
      SHOAL_SIDECAR_SOCKET: join(certs, "sidecar.sock"),
      SHOAL_WORKER_MODELS: MODEL,
    },
    readyMessage: "worker pulling",
  });
  ingress = await startIngress("server.crt", "server.key");
}, 300_000);

afterAll(async () => {
  await ingress.stop();
  await worker.stop();
  await nats.stop();
});

describe("ingress over TLS", { timeout: 120_000 }, () => {
  it("answers HTTPS/1.1 and embeds end to end through a TLS-only NATS", async () => {
    const listed = await https(ingress.port, ca);
    expect(listed.status).toBe(200);
    expect(listed.alpn).toBe("http/1.1");
    expect(JSON.parse(listed.body)).toMatchObject({ data: [{ id: MODEL }] });
    const embedded = await https(ingress.port, ca, { model: MODEL, input: ["a", "b", "c"] });
    expect(embedded.status, embedded.body).toBe(200);
    expect((JSON.parse(embedded.body) as { data: unknown[] }).data).toHaveLength(3);
  });

  it("serves gRPC over HTTP/2, negotiated by ALPN", async () => {
    const stub = inferenceStub(`127.0.0.1:${ingress.port}`, grpc.credentials.createSsl(ca), {
      "grpc.ssl_target_name_override": "localhost",
    });
    const answer = await new Promise<{ embeddings: unknown[] }>((resolve, reject) => {
      stub.Embed({ model: MODEL, inputs: ["a", "b"] }, new grpc.Metadata(), {}, (err, res) => {
        if (err !== null || res === undefined) reject(err ?? new Error("empty"));
        else resolve(res as { embeddings: unknown[] });
      });
    });
    expect(answer.embeddings).toHaveLength(2);
    stub.close();
  });

  it("passes the Python clients (openai over httpx, grpcio) trusting the CA", async () => {
    const { code, output } = await runPytest(
      ["tools/clients-py/tls"],
      `https://localhost:${ingress.port}`,
      { SHOAL_CA: file("ca.crt"), SHOAL_MODEL: MODEL },
    );
    expect(code, `pytest exited ${code}:\n${output}`).toBe(0);
    expect(output, output).toMatch(/\b2 passed\b/);
  }, 120_000);

  it("drops a cleartext client on the TLS port and goes on serving", async () => {
    const plain = await fetch(`http://127.0.0.1:${ingress.port}/v1/models`).catch(
      (e: unknown) => e,
    );
    expect(plain).toBeInstanceOf(Error);
    expect((await https(ingress.port, ca)).status).toBe(200);
  });

  it("is refused by clients when its certificate is self-signed or expired", async () => {
    const selfSigned = await startIngress("self-signed.crt", "self-signed.key");
    const expired = await startIngress("expired.crt", "expired.key");
    try {
      await expect(https(selfSigned.port, ca)).rejects.toMatchObject({
        code: "DEPTH_ZERO_SELF_SIGNED_CERT",
      });
      await expect(https(expired.port, ca)).rejects.toMatchObject({ code: "CERT_HAS_EXPIRED" });
    } finally {
      await selfSigned.stop();
      await expired.stop();
    }
  });

  it("refuses to start with a key that is not the certificate's, naming the variables", async () => {
    await expect(
      tlsFromEnv({ SHOAL_TLS_CERT: file("server.crt"), SHOAL_TLS_KEY: file("expired.key") }),
    ).rejects.toThrow(/SHOAL_TLS_CERT\/SHOAL_TLS_KEY: not a PEM certificate and its key/);
    await expect(tlsFromEnv({ SHOAL_TLS_CERT: file("server.crt") })).rejects.toThrow(
      /both SHOAL_TLS_CERT and SHOAL_TLS_KEY/,
    );
    await expect(
      tlsFromEnv({ SHOAL_TLS_CERT: file("nope.crt"), SHOAL_TLS_KEY: file("server.key") }),
    ).rejects.toThrow(/SHOAL_TLS_CERT: cannot read/);
  });
});

describe("NATS over TLS", { timeout: 60_000 }, () => {
  it("refuses a client that does not trust the server's CA", async () => {
    const untrusting = await connect({ servers: nats.url, reconnect: false }).catch(
      (e: unknown) => e,
    );
    expect(untrusting).toBeInstanceOf(Error);
    const wrongCa = await connect({
      servers: nats.url,
      reconnect: false,
      tls: { caFile: file("self-signed.crt") },
    }).catch((e: unknown) => e);
    expect(wrongCa).toBeInstanceOf(Error);
    const trusting = await connect({ servers: nats.url, tls: { caFile: file("ca.crt") } });
    expect(trusting.info?.tls_required).toBe(true);
    await trusting.close();
  });
});
