import { decode, encode } from "@msgpack/msgpack";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MINILM, startCluster, type TestCluster } from "./support/cluster.js";

let cluster: TestCluster;
let spy: NatsConnection;
let work: Subscription;
let published = 0;

beforeAll(async () => {
  cluster = await startCluster({ maxBodyBytes: 64 * 1024 });
  // Every queued work item also reaches this core subscriber, so bad-input tests can prove
  // nothing was queued.
  spy = await connect({ servers: cluster.nats.url });
  work = spy.subscribe("shoal.work.v1.>", {
    callback: () => {
      published++;
    },
  });
  await spy.flush();
});

afterAll(async () => {
  work.unsubscribe();
  await spy.close();
  await cluster.stop();
});

const MSGPACK = "application/msgpack";

async function post(
  body: Uint8Array | string,
  headers: Record<string, string>,
  path = "/v1/embeddings",
): Promise<Response> {
  return fetch(`${cluster.baseUrl}${path}`, { method: "POST", headers, body });
}

async function msgpackOf(res: Response): Promise<unknown> {
  expect(res.headers.get("content-type")).toBe(MSGPACK);
  return decode(new Uint8Array(await res.arrayBuffer()));
}

interface Answer {
  data: { index: number; embedding: Uint8Array | number[] | string; truncated: boolean }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

const INPUT = ["hello world", "MessagePack carries raw float32 bytes"];

describe("MessagePack bodies on /v1/embeddings", () => {
  it("answers a MessagePack request with embeddings as the float32 bytes of the JSON answer", async () => {
    const json = (await (
      await post(JSON.stringify({ model: MINILM, input: INPUT }), {
        "content-type": "application/json",
      })
    ).json()) as Answer;
    const res = await post(encode({ model: MINILM, input: INPUT }), {
      "content-type": MSGPACK,
      accept: MSGPACK,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("server-timing")).toMatch(/total;dur=/);
    const answer = (await msgpackOf(res)) as Answer;
    expect(answer.model).toBe(MINILM);
    expect(answer.usage).toEqual(json.usage);
    answer.data.forEach((d, i) => {
      expect(d.embedding).toBeInstanceOf(Uint8Array);
      const bytes = Buffer.from(d.embedding as Uint8Array);
      expect(bytes.length).toBe(384 * 4);
      const floats = Array.from({ length: 384 }, (_, j) => bytes.readFloatLE(j * 4));
      // JSON carries float32 in nine digits, which read back to the same float32.
      expect(floats).toEqual((json.data[i]?.embedding as number[]).map(Math.fround));
    });
  });

  it("reads a MessagePack request and answers JSON when Accept does not ask for MessagePack", async () => {
    const res = await post(encode({ model: MINILM, input: "one" }), { "content-type": MSGPACK });
    expect(res.headers.get("content-type")).toBe("application/json");
    const answer = (await res.json()) as Answer;
    expect(answer.data[0]?.embedding).toHaveLength(384);
  });

  it("answers a JSON request in MessagePack when Accept asks for it", async () => {
    const res = await post(JSON.stringify({ model: MINILM, input: ["one"] }), {
      "content-type": "application/json",
      accept: `application/json;q=0.5, ${MSGPACK}`,
    });
    const answer = (await msgpackOf(res)) as Answer;
    expect((answer.data[0]?.embedding as Uint8Array).byteLength).toBe(384 * 4);
  });

  it("keeps base64 when a MessagePack client asks for it explicitly", async () => {
    const res = await post(encode({ model: MINILM, input: ["one"], encoding_format: "base64" }), {
      "content-type": MSGPACK,
      accept: MSGPACK,
    });
    const answer = (await msgpackOf(res)) as Answer;
    expect(Buffer.from(answer.data[0]?.embedding as string, "base64").length).toBe(384 * 4);
  });

  it("lists the models in MessagePack", async () => {
    const res = await fetch(`${cluster.baseUrl}/v1/models`, { headers: { accept: MSGPACK } });
    const answer = (await msgpackOf(res)) as { data: { id: string }[] };
    expect(answer.data.map((m) => m.id)).toContain(MINILM);
  });
});

describe("malformed MessagePack is a 400 in OpenAI's shape, and nothing is queued", () => {
  const valid = encode({ model: MINILM, input: ["x"] });
  // A map header claiming 2^32-1 entries, then nothing: must not allocate for the claim.
  const hugeMap = Uint8Array.from([0xdf, 0xff, 0xff, 0xff, 0xff]);
  const hugeArray = Uint8Array.from([
    0x81,
    0xa5,
    ...Buffer.from("input"),
    0xdd,
    0xff,
    0xff,
    0xff,
    0xff,
  ]);
  it.each([
    { name: "an empty body", body: new Uint8Array(0), message: /empty/ },
    {
      name: "a truncated body",
      body: valid.subarray(0, valid.length - 3),
      message: /malformed MessagePack/,
    },
    {
      name: "trailing bytes",
      body: Uint8Array.from([...valid, 0xc0]),
      message: /malformed MessagePack/,
    },
    {
      name: "a reserved type byte",
      body: Uint8Array.from([0xc1]),
      message: /malformed MessagePack/,
    },
    { name: "a map claiming 4 billion entries", body: hugeMap, message: /malformed MessagePack/ },
    {
      name: "an array claiming 4 billion items",
      body: hugeArray,
      message: /malformed MessagePack/,
    },
    {
      name: "a __proto__ key",
      body: encode({ ["__proto__"]: 1, model: MINILM }),
      message: /malformed MessagePack|__proto__/,
    },
    { name: "an array body", body: encode([MINILM, "x"]), message: /must be an object/ },
    { name: "a bin body", body: encode(new Uint8Array(8)), message: /must be an object/ },
    {
      name: "bin as the input",
      body: encode({ model: MINILM, input: new Uint8Array(4) }),
      message: /`input` must be/,
    },
    {
      name: "a map key that is not a string",
      body: Uint8Array.from([0x81, 0xc3, 0x01]),
      message: /malformed MessagePack/,
    },
  ])("$name", async ({ body, message }) => {
    for (const accept of ["application/json", MSGPACK]) {
      const before = published;
      const res = await post(body, { "content-type": MSGPACK, accept });
      expect(res.status).toBe(400);
      const error = (accept === MSGPACK ? await msgpackOf(res) : await res.json()) as {
        error: { message: string; type: string; code: string };
      };
      expect(error.error.type).toBe("invalid_request_error");
      expect(error.error.code).toBe("invalid_argument");
      expect(error.error.message).toMatch(message);
      expect(error.error.message).not.toContain("\n");
      await spy.flush();
      expect(published).toBe(before);
    }
  });

  it("refuses an oversized MessagePack body with 413 before reading it", async () => {
    const res = await post(encode({ model: MINILM, input: ["x".repeat(70 * 1024)] }), {
      "content-type": MSGPACK,
      accept: MSGPACK,
    });
    expect(res.status).toBe(413);
    const error = (await msgpackOf(res)) as { error: { code: string } };
    expect(error.error.code).toBe("payload_too_large");
  });

  it("still serves the next request after all of that", async () => {
    const res = await post(encode({ model: MINILM, input: ["fine"] }), {
      "content-type": MSGPACK,
      accept: MSGPACK,
    });
    expect(res.status).toBe(200);
  });
});
