import { ROOT_CONTEXT, context, trace } from "@opentelemetry/api";
import { Writable } from "node:stream";
import { afterAll, expect, it } from "vitest";
import { createLogger } from "./logger.js";
import { startTracing } from "./tracing.js";

const tracing = startTracing({ serviceName: "test", env: {} });
afterAll(() => tracing.shutdown());

it("puts the active trace id on every line", () => {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  const logger = createLogger({ service: "svc", destination });
  const span = tracing.tracer.startSpan("op");
  context.with(trace.setSpan(ROOT_CONTEXT, span), () => {
    logger.info("inside");
  });
  logger.info("outside");
  span.end();
  const [inside, outside] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(inside).toMatchObject({
    service: "svc",
    msg: "inside",
    trace_id: span.spanContext().traceId,
  });
  expect(outside?.["trace_id"]).toBeUndefined();
});
