import { errorCode as codeOf } from "../helpers.js";
import { describe, expect, it } from "vitest";
import { DEFAULT_EPOCH_MS, VirtualClock, type ClockState } from "../../src/index.js";


describe("VirtualClock", () => {
  it("starts at the fixed epoch, never the host clock", () => {
    expect(DEFAULT_EPOCH_MS).toBe(Date.UTC(2026, 0, 5, 9, 0, 0));
    const clock = new VirtualClock();
    expect(clock.now()).toBe(DEFAULT_EPOCH_MS);
    expect(clock.iso()).toBe("2026-01-05T09:00:00.000Z");
  });

  it("accepts an explicit start", () => {
    expect(new VirtualClock(0).iso()).toBe("1970-01-01T00:00:00.000Z");
    expect(new VirtualClock(1234).now()).toBe(1234);
  });

  it("advances by exactly the requested amount, including 0 and fractions", () => {
    const clock = new VirtualClock(1000);
    clock.advance(0);
    expect(clock.now()).toBe(1000);
    clock.advance(250);
    clock.advance(0.5);
    expect(clock.now()).toBe(1250.5);
    clock.advance(86_400_000);
    expect(clock.iso()).toBe("1970-01-02T00:00:01.250Z");
  });

  it.each([-1, -0.001, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, "5" as unknown as number])(
    "advance(%s) is invalid_argument and leaves time unchanged",
    (ms) => {
      const clock = new VirtualClock(500);
      expect(codeOf(() => clock.advance(ms))).toBe("invalid_argument");
      expect(clock.now()).toBe(500);
    },
  );

  it.each([Number.NaN, Number.POSITIVE_INFINITY])("constructor rejects start %s", (start) => {
    expect(codeOf(() => new VirtualClock(start))).toBe("invalid_argument");
  });

  it("state round-trips and is a copy", () => {
    const clock = new VirtualClock(10);
    clock.advance(5);
    const state = clock.state();
    expect(state).toEqual({ nowMs: 15 });
    clock.advance(5);
    expect(state).toEqual({ nowMs: 15 });
    const restored = VirtualClock.fromState(JSON.parse(JSON.stringify(state)) as ClockState);
    expect(restored.now()).toBe(15);
    restored.advance(1);
    expect(clock.now()).toBe(20);
  });

  it.each([
    ["null", null],
    ["a number", 5],
    ["empty object", {}],
    ["string nowMs", { nowMs: "5" }],
    ["NaN nowMs", { nowMs: Number.NaN }],
    ["infinite nowMs", { nowMs: Number.POSITIVE_INFINITY }],
  ])("fromState rejects %s with invalid_snapshot", (_name, state) => {
    expect(codeOf(() => VirtualClock.fromState(state as unknown as ClockState))).toBe("invalid_snapshot");
  });
});
