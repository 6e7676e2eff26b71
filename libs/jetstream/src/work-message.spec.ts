import { describe, expect, it } from "vitest";
import { parseAckSubject } from "./work-message.js";

describe("parseAckSubject", () => {
  it.each([
    ["$JS.ACK.SHOAL_WORK.work-m.3.1042.17.1733150000000000000.0", 3, 1042, 0],
    ["$JS.ACK.hub.ACCHASH.SHOAL_WORK.work-m.1.7.7.1733150000000000000.4.xyz", 1, 7, 4],
    ["$JS.ACK.hub.ACCHASH.SHOAL_WORK.work-m.2.9.9.1733150000000000000.12", 2, 9, 12],
  ])("%s → delivery %i, sequence %i, pending %i", (subject, delivered, sequence, pending) => {
    expect(parseAckSubject(subject)).toEqual({
      deliveryCount: delivered,
      streamSequence: sequence,
      pending,
    });
  });
  it.each(["_INBOX.abc", "$JS.ACK.too.short", "$JS.ACK.S.C.x.y.z.t.p"])("rejects %s", (subject) => {
    expect(() => parseAckSubject(subject)).toThrow();
  });
});
