import { describe, expect, it } from "vitest";
import { operationOf } from "./registry-metrics.js";

describe("operationOf", () => {
  it("names each route's operation from its method and path shape, never its names", () => {
    expect(operationOf("PUT", "/v1/adapters/smollm2/sea-poet")).toBe("upload");
    expect(operationOf("GET", "/v1/adapters")).toBe("list");
    expect(operationOf("GET", "/v1/adapters/smollm2/sea-poet")).toBe("get");
    expect(operationOf("GET", "/v1/adapters/smollm2/sea-poet/versions/2")).toBe("get");
    expect(operationOf("DELETE", "/v1/adapters/smollm2/sea-poet/versions/2")).toBe("delete");
    expect(operationOf("GET", "/healthz")).toBe("health");
  });

  it("collapses every other path and method into unknown", () => {
    expect(operationOf("POST", "/v1/adapters")).toBe("unknown");
    expect(operationOf("PATCH", "/v1/adapters/a/b")).toBe("unknown");
    expect(operationOf("GET", "/v1/adapters/a/b/c/d")).toBe("unknown");
    expect(operationOf("GET", "/admin")).toBe("unknown");
  });
});
