// A process that makes one long-poll pull and prints how many messages it got: the pull test
// pauses it (SIGSTOP) while the server delivers, as a CPU-starved or paused worker would be.
import { connect } from "@nats-io/transport-node";
import { pull } from "../src/index.js";

const [url, stream, consumer] = process.argv.slice(2);
if (url === undefined || stream === undefined || consumer === undefined) {
  throw new Error("usage: stalled-pull.ts <nats-url> <stream> <consumer>");
}
const nc = await connect({ servers: url });
await nc.flush();
const got = pull(nc, stream, consumer, { batch: 1, expiresMs: 1_000 });
// The pull request is with the server once a round trip after it has been sent.
await nc.flush();
console.log("pulling");
const messages = await got;
for (const m of messages) m.ack();
await nc.flush();
console.log(JSON.stringify({ messages: messages.length }));
await nc.close();
