/**
 * `llmix new NAME`: scaffold an environment of one's own. The template is the guide's example
 * (examples/inventory-restock.ts, shipped with the package), renamed, so what is generated is code
 * that passes `llmix check` as it stands, not a stub: a world, tools, tasks, a verifier, a reference
 * solver and probes, plus a test (node's own runner) and a README saying what to change first.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { ValidationError } from "../core/errors.js";
import { print } from "./options.js";

const TEMPLATE_ID = "inventory-restock";
const TEMPLATE_CLASS = "InventoryRestock";
/** Environment ids `new` accepts: lowercase words joined by hyphens, as the built-in ones are. */
const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** The files of a new environment called `name`, keyed by file name, made from the guide's example. */
export function scaffold(name: string): Record<string, string> {
  if (!NAME.test(name) || name.length > 40) {
    throw new ValidationError("invalid_argument", `environment name "${name}" must be lowercase words joined by hyphens (a-z, 0-9), at most 40 characters, e.g. "ticket-triage"`);
  }
  const className = name.split("-").map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
  const template = readFileSync(fileURLToPath(new URL("../../examples/inventory-restock.ts", import.meta.url)), "utf8");
  const body = template.slice(template.indexOf("*/") + 2).replaceAll(TEMPLATE_ID, name).replaceAll(TEMPLATE_CLASS, className);
  const header = `/**
 * The ${name} environment, scaffolded by \`llmix new\` from LLMix's example (a shop restocking its
 * low items). It passes \`llmix check\` as generated; change it into your task piece by piece, running
 * the checklist after each change (see README.md next to this file and docs/building-an-environment.md).
 */`;
  const test = `/**
 * The ${name} environment's own test, on node's test runner: node --import tsx --test ${name}/env.test.ts
 * The reference solver must solve every difficulty; a policy that only claims success must not.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runPolicy } from "llmix-rl";
import entry from "./env.js";

test("the reference solver solves a task of every difficulty", async () => {
  for (const difficulty of entry.create().tasks.difficulties) {
    const env = entry.create();
    const taskId = \`${name}/\${difficulty}/seed-7\`;
    const initial = await env.reset(taskId, 1);
    const run = await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
    assert.equal(run.transitions.at(-1)?.result.rewardComponents.task, 1, taskId);
    await env.close();
  }
});

test("saying it is done without doing anything scores 0", async () => {
  const env = entry.create();
  const initial = await env.reset(\`${name}/easy/seed-7\`, 1);
  const claimsDone = { name: "claims-done", act: () => ({ action: { type: "message" as const, content: "DONE" } }) };
  const run = await runPolicy(env, claimsDone, { maxSteps: env.maxSteps, initial });
  assert.equal(run.transitions.at(-1)?.result.rewardComponents.task, 0);
  await env.close();
});
`;
  const readme = `# ${name}

An LLMix environment, scaffolded by \`llmix new ${name}\` from the guide's example. It works as generated:

\`\`\`sh
./node_modules/.bin/llmix check --module ${name}/env.ts          # the QA checklist (every check must pass)
./node_modules/.bin/llmix play ${name} --module ${name}/env.ts --task ${name}/easy/seed-1 --seed 1
node --import tsx --test ${name}/env.test.ts                      # its own test
\`\`\`

(\`llmix\` is the command of the npm package \`llmix-rl\`; in a checkout of LLMix itself it is
\`node dist/cli/bin.js\`. Never \`npx llmix\`: the registry's \`llmix\` is another project.)

Change it into your task in this order, running \`llmix check\` after each step:

1. **The task** (\`Task\`, \`tasks\`): what varies between tasks and how each difficulty draws it from the seed's
   \`rng\` (never \`Math.random\`).
2. **The world** (\`World\`, \`createWorld\`) and **the tools** (\`toolsFor\`): what the agent reads and changes.
3. **The verifier** (\`evaluate\`): the outcome from the final world, never from what the agent says.
4. **The reference solver** (\`referenceSolver\`): the proof that every task is solvable.
5. **The probes**: the lazy and the greedy policies that must not score; add the ways your task can be gamed.
6. \`info.id\`, \`info.description\` and \`describeTask\`: what the agent is told.
`;
  return { "env.ts": `${header}${body}`, "env.test.ts": test, "README.md": readme };
}

/** Add `llmix new` to the program. */
export function registerNewCommand(program: Command): void {
  program
    .command("new <name>")
    .description("scaffold a new environment (a working copy of the guide's example, renamed) in ./<name>/")
    .option("--dir <path>", "where to write it (default ./<name>)")
    .action((name: string, opts: { dir?: string }) => {
      const files = scaffold(name);
      const dir = resolve(opts.dir ?? name);
      if (existsSync(dir)) throw new ValidationError("invalid_argument", `${dir} exists already; choose another --dir or remove it`);
      // Written aside, then renamed into place: a command killed midway leaves no half environment
      // (which the next `llmix new` would refuse as existing).
      mkdirSync(dirname(dir), { recursive: true });
      const staging = mkdtempSync(join(dirname(dir), `.${basename(dir)}-`));
      try {
        for (const [file, text] of Object.entries(files)) writeFileSync(join(staging, file), text);
        renameSync(staging, dir);
      } catch (error) {
        rmSync(staging, { recursive: true, force: true });
        throw error;
      }
      const shown = relative(process.cwd(), dir) || ".";
      print(`wrote ${Object.keys(files).map((f) => join(shown, f)).join(", ")}`);
      print(`next: llmix check --module ${join(shown, "env.ts")}   (then read ${join(shown, "README.md")})`);
    });
}
