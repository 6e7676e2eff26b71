import { expect, it } from "vitest";
import { wantsNoWait } from "./no-wait-header.js";

it("reads 1 and true, in any case and with spaces, as no-wait; anything else waits", () => {
  for (const yes of ["1", "true", "TRUE", " true ", ["1", "0"]])
    expect(wantsNoWait(yes)).toBe(true);
  for (const no of [undefined, null, "", "0", "false", "yes", [], ["0", "1"]]) {
    expect(wantsNoWait(no)).toBe(false);
  }
});
