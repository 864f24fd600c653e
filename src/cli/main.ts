/**
 * The `llmix` command. Every command that takes an environment also takes `--module PATH` (repeatable)
 * to load environments from a user's own file. Usage errors (unknown env, malformed task id, bad flag)
 * print one line naming the valid choices and exit with code 2; a failed check exits with 1.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command, CommanderError } from "commander";
import type { EnvironmentOptions } from "../core/environment.js";
import { closeSharedBrowser } from "../sandboxes/web/browser-driver.js";
import { LlmixError, ValidationError } from "../core/errors.js";
import { fingerprint } from "../core/json.js";
import { generateTask, type TaskGenerator } from "../tasks/generator.js";
import { scenarioStats } from "../tasks/features.js";
import { parseSplit, sampleTaskIds } from "../tasks/splits.js";
import { runChecks, type CheckReport } from "../qa/checks.js";
import { formatCheckReport } from "../qa/report.js";
import { renderTable } from "../qa/table.js";
import { play } from "./play.js";
import { summarize } from "../core/registry.js";
import { integer, loadRegistry, moduleOption, print, progressBar, registryWith } from "./options.js";
import { registerMcpCommand } from "./mcp-command.js";
import { registerNewCommand } from "./new-command.js";
import { registerRewardCommands } from "./reward-commands.js";
import { registerDataCommands } from "./data-commands.js";
import { registerRolloutCommands } from "./rollout-commands.js";
import { registerServeCommand } from "./serve-command.js";
import { registerUiCommand } from "./ui-command.js";
import { registerWorkerCommand } from "./worker-command.js";
import { requireWellTypedModules } from "./typecheck.js";

/** Exit codes: 0 ok, 1 a check or command failed, 2 usage error. */
const USAGE_CODES = new Set([
  "unknown_env",
  "unknown_policy",
  "unknown_format",
  "unknown_run",
  "unknown_episode",
  "unknown_store",
  "invalid_task_id",
  "invalid_argument",
  "module_load_failed",
  "invalid_config",
]);

/** Build the command tree. Exported for tests that call it in-process. */
export function buildProgram(): Command {
  const program = new Command("llmix")
    .description("Agentic RL environments: one contract, real sandboxes, honest rewards.")
    .version("0.1.0")
    .showSuggestionAfterError(true);

  program
    .command("envs")
    .description("list the environments")
    .addOption(moduleOption())
    .option("--json", "print JSON")
    .action(async (opts: { module?: string[]; json?: boolean }) => {
      const registry = await registryWith(opts.module);
      const rows = registry.list().map(summarize);
      if (opts.json) return print(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return print("No environments registered. Load one with --module PATH.");
      print(renderTable(["id", "version", "difficulties", "max steps", "description"], rows.map((r) => [r.id, r.version, r.difficulties.join(","), String(r.max_steps), r.description])));
    });

  program
    .command("tasks <env>")
    .description("sample task ids of an environment")
    .option("--difficulty <d>", "only this difficulty")
    .option("--split <split>", "train or eval", "train")
    .option("-n <n>", "how many ids", integer("-n", 0, 1_000_000), 10)
    .option("--seed <seed>", "sampling seed", integer("--seed", 0, 0xffffffff), 0)
    .option("--json", "print JSON with content fingerprints")
    .option("--stats", "count the distinct scenarios (declared task features) per difficulty and split, instead of listing ids")
    .option("--samples <n>", "with --stats: task ids generated per difficulty and split", integer("--samples", 1, 1_000_000), 1000)
    .addOption(moduleOption())
    .action(async (envId: string, opts: { difficulty?: string; split: string; n: number; seed: number; json?: boolean; stats?: boolean; samples: number; module?: string[] }) => {
      const env = (await registryWith(opts.module)).get(envId).create();
      if (opts.stats) {
        try {
          printScenarioStats(envId, env.tasks, opts.samples, opts.seed, opts.json === true);
        } finally {
          await env.close();
        }
        return;
      }
      const difficulties = env.tasks.difficulties;
      if (opts.difficulty !== undefined && !difficulties.includes(opts.difficulty)) {
        throw new ValidationError("invalid_argument", `unknown difficulty "${opts.difficulty}" for ${envId}; valid: ${difficulties.join(", ")}`);
      }
      const ids = sampleTaskIds({
        family: env.tasks.families[0] as string,
        difficulties: opts.difficulty ? [opts.difficulty] : difficulties,
        n: opts.n,
        split: parseSplit(opts.split),
        seed: opts.seed,
      });
      if (opts.json) {
        print(JSON.stringify(ids.map((id) => ({ task_id: id, fingerprint: fingerprint(generateTask(env.tasks, id).task) })), null, 2));
      } else {
        for (const id of ids) print(id);
      }
      await env.close();
    });

  program
    .command("reset <env>")
    .description("reset an episode and print its first observation, its tools and the snapshot's sha256")
    .requiredOption("--task <id>", "task id, e.g. family/easy/seed-1")
    .requiredOption("--seed <n>", "episode seed", integer("--seed", 0, 0xffffffff))
    .option("--json", "print JSON")
    .addOption(moduleOption())
    .action(async (envId: string, opts: { task: string; seed: number; json?: boolean; module?: string[] }) => {
      const entry = (await registryWith(opts.module)).get(envId);
      const env = entry.create();
      const observation = await env.reset(opts.task, opts.seed);
      const out = {
        env: entry.id,
        env_version: entry.version,
        task_id: opts.task,
        seed: opts.seed,
        observation,
        tools: env.tools(),
        snapshot_sha256: fingerprint(await env.snapshot()),
      };
      await env.close();
      if (opts.json) return print(JSON.stringify(out, null, 2));
      print(`${entry.id}@${entry.version} ${opts.task} seed ${opts.seed}\n\n${observation.rendered}\n\n(${observation.tokens} tokens)`);
      print(`\nTools:\n${out.tools.map((t) => `  ${t.name} (${t.effect}): ${t.description}`).join("\n")}`);
      print(`\nsnapshot sha256 ${out.snapshot_sha256}`);
    });

  program
    .command("play <env>")
    .description("play an episode by hand: type tool calls and messages")
    .requiredOption("--task <id>", "task id")
    .requiredOption("--seed <n>", "episode seed", integer("--seed", 0, 0xffffffff))
    .option("--browser", "web environments: drive the real page in Chromium (a visible window when DISPLAY is set) and save a screenshot after every step")
    .option("--screenshots <dir>", "where --browser saves its screenshots", "llmix-data/screenshots")
    .addOption(moduleOption())
    .action(async (envId: string, opts: { task: string; seed: number; module?: string[]; browser?: boolean; screenshots: string }) => {
      if (opts.browser && process.env.DISPLAY) process.env.LLMIX_BROWSER_HEADED = "1";
      const env = (await registryWith(opts.module)).get(envId).create(opts.browser ? ({ driver: "browser" } as EnvironmentOptions) : undefined);
      const shoot = (env as { screenshot?: () => Promise<Buffer> }).screenshot?.bind(env);
      if (opts.browser && !shoot) throw new ValidationError("invalid_argument", `--browser: ${envId} has no web pages to show`);
      const observation = await env.reset(opts.task, opts.seed);
      const afterStep = async (step: number): Promise<string | null> => {
        if (!opts.browser || !shoot) return null;
        mkdirSync(opts.screenshots, { recursive: true });
        const file = join(opts.screenshots, `step-${String(step).padStart(3, "0")}.png`);
        writeFileSync(file, await shoot());
        return `[screenshot ${file}]`;
      };
      try {
        await play(env, observation.rendered, { input: process.stdin, output: process.stdout, afterStep });
      } finally {
        await env.close();
        if (opts.browser) await closeSharedBrowser();
      }
    });

  program
    .command("check [envs...]")
    .description("run the QA checklist; exits 1 when any check fails")
    .option("--all", "check every registered environment")
    .option("--json", "print JSON")
    .option("--samples <n>", "task ids per difficulty", integer("--samples", 1, 10_000), 10)
    .option("--no-hacking", "skip the hacking analysis (sensitivity, invariance, robustness, leakage, memorization, task-space)")
    .option("--no-typecheck", "load TypeScript --module files without type-checking them first")
    .addOption(moduleOption())
    .action(async (envIds: string[], opts: { all?: boolean; json?: boolean; samples: number; hacking: boolean; typecheck: boolean; module?: string[] }) => {
      if (opts.typecheck && opts.module) {
        const note = await requireWellTypedModules(opts.module);
        if (note) process.stderr.write(`llmix check: ${note}\n`);
      }
      const { registry, moduleIds } = await loadRegistry(opts.module);
      const ids = opts.all ? registry.ids() : envIds.length > 0 ? envIds : moduleIds;
      if (ids.length === 0) {
        throw new ValidationError("invalid_argument", `name an environment, --all, or --module PATH; registered: ${registry.ids().join(", ") || "(none)"}`);
      }
      const entries = ids.map((id) => registry.get(id));
      const reports: CheckReport[] = [];
      for (const entry of entries) {
        const bar = progressBar(`${entry.id} [{bar}] {value}/{total} checks · {episodes} episodes ({rate}/s) · {eta_formatted} left · {check}`);
        const started = process.hrtime.bigint();
        const rate = (episodes: number) => (episodes / Math.max(1e-3, Number(process.hrtime.bigint() - started) / 1e9)).toFixed(1);
        reports.push(
          await runChecks(entry, {
            samples: opts.samples,
            hacking: opts.hacking,
            onCheck: (name, index, total) => {
              if (index === 0) bar?.start(total, 0, { check: name, episodes: 0, rate: "0.0" });
              else bar?.update(index, { check: name });
            },
            onEpisode: (episodes) => bar?.update({ episodes, rate: rate(episodes) }),
          }),
        );
        bar?.stop();
      }
      if (opts.json) print(JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2));
      else print(reports.map(formatCheckReport).join("\n\n"));
      if (!reports.every((r) => r.passed)) process.exitCode = 1;
    });

  registerRolloutCommands(program);
  registerDataCommands(program);
  registerRewardCommands(program);
  registerMcpCommand(program);
  registerNewCommand(program);
  registerServeCommand(program);
  registerUiCommand(program);
  registerWorkerCommand(program);
  return program;
}

/** Run the CLI with argv; returns the exit code instead of exiting (tests call this). */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  program.exitOverride();
  for (const command of program.commands) command.exitOverride();
  // Commander's own error lines are replaced by one line that also names the valid choices.
  for (const command of [program, ...program.commands]) command.configureOutput({ writeErr: () => undefined });
  try {
    await program.parseAsync(argv, { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return 0;
      process.stderr.write(`llmix: ${commanderMessage(error, program, argv)}\n`);
      return 2;
    }
    const e = error instanceof LlmixError ? error : null;
    process.stderr.write(`llmix: ${e ? `${e.code}: ${e.message}` : (error as Error).stack ?? String(error)}\n`);
    return e && USAGE_CODES.has(e.code) ? 2 : 1;
  }
}

/** Commander's message, plus the valid options or commands so the user sees the choices. */
function commanderMessage(error: CommanderError, program: Command, argv: string[]): string {
  const message = error.message.replace(/^error: /, "").split("\n")[0] as string;
  const command = program.commands.find((c) => c.name() === argv[0]);
  if (error.code === "commander.unknownOption" || error.code === "commander.missingMandatoryOptionValue" || error.code === "commander.optionMissingArgument") {
    const options = (command ?? program).options.map((o) => o.long ?? o.short).filter(Boolean);
    return `${message}; valid options${command ? ` of ${command.name()}` : ""}: ${options.join(", ")}`;
  }
  if (error.code === "commander.unknownCommand") {
    return `${message}; valid commands: ${program.commands.map((c) => c.name()).join(", ")}`;
  }
  return message;
}

/** `llmix tasks ENV --stats`: distinct scenarios per difficulty and split, and each feature's values. */
function printScenarioStats(envId: string, tasks: TaskGenerator<unknown>, samples: number, seed: number, json: boolean): void {
  const stats = scenarioStats(tasks, { samples, seed });
  if (json) return print(JSON.stringify({ env: envId, features: tasks.features?.declared ?? [], stats }, null, 2));
  print(`${envId}: distinct scenarios among ${samples} task ids per difficulty and split (a scenario is a combination of the declared features)`);
  print(renderTable(["difficulty", "train", "eval", "in both"], stats.map((s) => [s.difficulty, String(s.train), String(s.eval), String(s.shared)])));
  for (const feature of tasks.features?.declared ?? []) {
    const shares = stats.map((s) => `${s.difficulty}: ${Object.entries(s.values[feature.name] ?? {}).sort((a, b) => b[1] - a[1]).map(([v, p]) => `${v} ${Math.round(p * 100)}%`).join(", ")}`);
    print(`${feature.name} (${feature.kind}: ${feature.description})\n  ${shares.join("\n  ")}`);
  }
}
