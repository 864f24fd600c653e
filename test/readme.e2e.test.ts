/**
 * README.md's first code block holds two commands: `npm install && <main job>` and the test command;
 * test/newcomer.e2e.test.ts runs both, verbatim, in a fresh clone. Here: their shape, and the
 * package-name rule (issue 14): the registry's `llmix` is another project, so no doc runs our command
 * through `npx llmix`, and code samples import the package by its own name.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const readme = readFileSync(join(root, "README.md"), "utf8");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name: string; bin: Record<string, string>; scripts: Record<string, string> };

/** The commands of README's first ```sh block, without their trailing comments. */
function readmeCommands(): string[] {
  const block = /```sh\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error("README.md has no ```sh block");
  return (block[1] as string).split("\n").map((line) => line.replace(/\s+#.*$/, "").trim()).filter((line) => line !== "");
}

/** Every Markdown file a user reads: README, docs/, the Python client's README. */
function userDocs(): string[] {
  const out = [join(root, "README.md"), join(root, "clients/python/README.md")];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".md")) out.push(path);
    }
  };
  walk(join(root, "docs"));
  return out;
}

describe("README.md", () => {
  it("starts with two commands: install and run the main job, then the tests", () => {
    const commands = readmeCommands();
    expect(commands).toHaveLength(2);
    expect(commands[0]).toMatch(/^npm install && node dist\/cli\/bin\.js /);
    expect(commands[1]).toBe("npm test");
    expect(pkg.scripts.test).toMatch(/vitest run/);
  });
});

describe("the package name", () => {
  it("is one we own (llmix-rl), and the command it installs is still llmix", () => {
    expect(pkg.name).toBe("llmix-rl");
    expect(Object.keys(pkg.bin)).toEqual(["llmix"]);
  });

  it("no doc runs the command through npx llmix, which resolves the registry's unrelated package", () => {
    for (const file of userDocs()) {
      readFileSync(file, "utf8").split("\n").forEach((line, i) => {
        if (/npx llmix\b/.test(line)) expect(line, `${file}:${i + 1}`).toMatch(/\bnever\b/);
      });
    }
  });

  it("code samples and examples import the package by its name", () => {
    const files = [...userDocs(), ...readdirSync(join(root, "examples")).map((f) => join(root, "examples", f))];
    for (const file of files) {
      for (const m of readFileSync(file, "utf8").matchAll(/from ["'](llmix[^"']*)["']/g)) expect(m[1], file).toBe(pkg.name);
    }
  });
});

describe("the install", () => {
  it("pulls no package whose engines exclude Node 20 (npm would warn EBADENGINE, and it may not run)", () => {
    const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as { packages: Record<string, { engines?: unknown }> };
    const tooNew = Object.entries(lock.packages).flatMap(([path, meta]) => {
      const node = (meta.engines as { node?: unknown } | undefined)?.node;
      const floor = typeof node === "string" ? /^\s*>=?\s*v?(\d+)/.exec(node) : null;
      return floor && Number(floor[1]) > 20 ? [`${path} (node ${node as string})`] : [];
    });
    expect(tooNew).toEqual([]);
  });
});
