/**
 * `llmix mcp`: one episode served over MCP on stdio, for MCP clients that spawn their servers
 * (agent SDKs, desktop assistants): the episode's tools, plus `send_message` where the environment takes
 * messages, so a client can finish the episode. One process, one episode: another needs a restart.
 * stdout carries MCP messages only; everything else goes to stderr.
 */
import type { Command } from "commander";
import { openStoreAt } from "../store/open.js";
import { serveMcpStdio } from "../server/mcp.js";
import { integer, moduleOption, registryWith } from "./options.js";

interface McpFlags {
  env: string;
  task: string;
  seed: number;
  store: string;
  record?: boolean;
  module?: string[];
}

/** Add `llmix mcp --env X --task ID --seed N [--module PATH]... [--store PATH --record]`. */
export function registerMcpCommand(program: Command): void {
  program
    .command("mcp")
    .description("serve one episode over MCP on stdio until stdin closes: its tools, and send_message for messages to the user")
    .requiredOption("--env <id>", "environment id")
    .requiredOption("--task <id>", "task id, e.g. family/easy/seed-1")
    .requiredOption("--seed <n>", "episode seed", integer("--seed", 0, 0xffffffff))
    .option("--store <path>", "trajectory store for --record: a SQLite file or a postgres:// URL", "./llmix-data/llmix.db")
    .option("--record", "write the episode to the trajectory store")
    .addOption(moduleOption())
    .action(async (flags: McpFlags) => {
      const registry = await registryWith(flags.module);
      // Fail on an unknown env before a --record store file is created for nothing.
      registry.get(flags.env);
      const store = flags.record ? await openStoreAt(flags.store) : undefined;
      try {
        await serveMcpStdio({ registry, env: flags.env, task_id: flags.task, seed: flags.seed, record: flags.record === true, store });
      } finally {
        await store?.close();
      }
    });
}
