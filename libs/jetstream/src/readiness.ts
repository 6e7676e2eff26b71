import type { NatsConnection } from "@nats-io/transport-node";

/** Where a component reports what keeps the process from serving (telemetry's `Readiness`). */
export interface ReadinessSink {
  set(component: string, problem: string | undefined): void;
}

/**
 * Marks `readiness` not ready while `nc` is disconnected, until the connection closes. The
 * process itself stays up: connections reconnect forever, and an orchestrator that restarted
 * it would only lose what it holds.
 */
export async function reportNatsReadiness(
  nc: NatsConnection,
  readiness: ReadinessSink,
): Promise<void> {
  readiness.set("nats", undefined);
  for await (const event of nc.status()) {
    if (event.type === "disconnect") readiness.set("nats", `disconnected from ${event.server}`);
    else if (event.type === "reconnect") readiness.set("nats", undefined);
    else if (event.type === "close") {
      readiness.set("nats", "connection closed");
      return;
    }
  }
}
