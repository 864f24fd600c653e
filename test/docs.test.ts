/** The building-an-environment guide quotes examples/inventory-restock.ts; every quote must match the file. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const guide = readFileSync(new URL("../docs/building-an-environment.md", import.meta.url), "utf8");
const example = readFileSync(new URL("../examples/inventory-restock.ts", import.meta.url), "utf8");
const quotes = [...guide.matchAll(/<!-- example: ([\w-]+) -->\n```ts\n([\s\S]*?)```/g)].map((m) => [m[1], m[2]] as const);

describe("docs/building-an-environment.md", () => {
  it("quotes the example file", () => {
    expect(quotes.length).toBeGreaterThanOrEqual(8);
  });
  it.each(quotes)("block %s appears verbatim in examples/inventory-restock.ts", (_name, code) => {
    expect(example).toContain(code);
  });
});
