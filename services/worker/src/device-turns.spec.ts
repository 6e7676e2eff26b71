import { describe, expect, it } from "vitest";
import { DeviceTurns } from "./device-turns.js";

describe("DeviceTurns", () => {
  it("gives turns in the order they were asked for, one slot at a time", async () => {
    const turns = new DeviceTurns(1);
    const order: string[] = [];
    const first = await turns.acquire();
    const b = turns.acquire().then((end) => {
      order.push("b");
      return end;
    });
    const c = turns.acquire().then((end) => {
      order.push("c");
      return end;
    });
    expect(turns.waiting).toBe(2);
    await Promise.resolve();
    expect(order).toEqual([]);
    first();
    first();
    const endB = await b;
    expect(order).toEqual(["b"]);
    endB();
    (await c)();
    expect(order).toEqual(["b", "c"]);
    expect(turns.waiting).toBe(0);
    // All slots are free again: two acquisitions in a row do not wait.
    const again = await turns.acquire();
    again();
  });

  it("runs as many at once as it has slots", async () => {
    const turns = new DeviceTurns(2);
    await turns.acquire();
    await turns.acquire();
    let third = false;
    void turns.acquire().then(() => (third = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(third).toBe(false);
  });

  it("refuses a slot count that is not a positive integer", () => {
    expect(() => new DeviceTurns(0)).toThrow("slots must be a positive integer");
    expect(() => new DeviceTurns(1.5)).toThrow("slots must be a positive integer");
  });
});
