import { errorCode as codeOf } from "../helpers.js";
import { describe, expect, it } from "vitest";
import { EnvironmentRegistry, LlmixError, NotFoundError, ValidationError, assertSemver, entryFor, type EnvironmentEntry } from "../../src/index.js";
import { TinyEnv } from "../fixtures/tiny-env.js";
import inventoryEntry, { InventoryRestock } from "../../examples/inventory-restock.js";

function entry(id: string, version = "1.0.0"): EnvironmentEntry {
  return { id, version, description: id, create: (options) => new TinyEnv(options) };
}


describe("assertSemver", () => {
  it.each(["0.0.0", "1.2.3", "10.20.30", "1.0.0-rc.1", "1.0.0+build.5", "1.0.0-alpha+001"])("accepts %s", (v) => {
    expect(() => assertSemver(v)).not.toThrow();
  });

  it.each(["1", "1.2", "v1.2.3", "01.2.3", "1.02.3", "1.2.3.4", "", "1.2.3-", " 1.2.3", "latest"])("rejects %j", (v) => {
    expect(codeOf(() => assertSemver(v))).toBe("invalid_version");
  });
});

describe("EnvironmentRegistry", () => {
  it("registers, lists sorted, and creates fresh instances", async () => {
    const registry = new EnvironmentRegistry();
    registry.register(entry("zeta"));
    registry.register(entry("alpha"));
    expect(registry.ids()).toEqual(["alpha", "zeta"]);
    expect(registry.list().map((e) => e.id)).toEqual(["alpha", "zeta"]);
    expect(registry.has("alpha")).toBe(true);
    expect(registry.has("beta")).toBe(false);
    const a = registry.get("alpha").create();
    const b = registry.get("alpha").create({ maxSteps: 2 });
    expect(a).not.toBe(b);
    expect(b.maxSteps).toBe(2);
  });

  it("an unknown id is unknown_env naming the valid ids", () => {
    const registry = new EnvironmentRegistry();
    let error: unknown;
    try {
      registry.get("x");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as LlmixError).message).toContain("(none registered)");
    registry.register(entry("tiny"));
    expect(codeOf(() => registry.get("nope"))).toBe("unknown_env");
    try {
      registry.get("nope");
    } catch (e) {
      expect((e as LlmixError).details).toEqual({ valid: ["tiny"] });
    }
  });

  it("refuses duplicates unless replace is given", () => {
    const registry = new EnvironmentRegistry();
    registry.register(entry("tiny", "1.0.0"));
    expect(() => registry.register(entry("tiny", "1.1.0"))).toThrow(ValidationError);
    registry.register(entry("tiny", "2.0.0"), { replace: true });
    expect(registry.get("tiny").version).toBe("2.0.0");
  });

  it.each(["", "Tiny", "-tiny", "ti ny", "tiny/env"])("rejects id %j with invalid_config", (id) => {
    expect(codeOf(() => new EnvironmentRegistry().register(entry(id)))).toBe("invalid_config");
  });

  it("rejects a non-semver version", () => {
    expect(codeOf(() => new EnvironmentRegistry().register(entry("tiny", "1.0")))).toBe("invalid_version");
  });
});

describe("entryFor", () => {
  it("reads id, version and description from the class", () => {
    const e = entryFor(TinyEnv);
    expect(e).toMatchObject({ id: "tiny", version: "1.0.0", description: "Bring a counter to its target." });
    expect(e.create()).toBeInstanceOf(TinyEnv);
  });

  it("the example's default export is its registry entry", () => {
    expect(inventoryEntry).toMatchObject({ id: "inventory-restock", version: "1.0.0" });
    expect(inventoryEntry.create()).toBeInstanceOf(InventoryRestock);
    const registry = new EnvironmentRegistry();
    registry.register(inventoryEntry);
    expect(registry.ids()).toEqual(["inventory-restock"]);
  });
});
