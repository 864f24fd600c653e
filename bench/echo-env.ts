/**
 * The trivial environment of the benchmarks: one `echo` tool that returns its arguments, no world to
 * speak of. What it costs is the framework's own overhead (and, served, the service's).
 * Also a `--module` file: `llmix serve --module bench/echo-env.ts`.
 */
import { z } from "zod";
import { BaseEnvironment, defineTool, entryFor, type JsonValue, type TaskGenerator, type VerifierResult } from "../src/index.js";

export const echo = defineTool({
  name: "echo",
  description: "Return the arguments.",
  input: z.object({ text: z.string(), n: z.number().int() }),
  effect: "read",
  handler: (args) => ({ echoed: args.text, n: args.n }),
});

export class EchoEnv extends BaseEnvironment<{ n: number }, { calls: number }> {
  readonly info = { id: "bench-echo", version: "1.0.0", description: "benchmark: one echo tool", maxSteps: 1e9 };
  readonly tasks: TaskGenerator<{ n: number }> = { families: ["bench-echo"], difficulties: ["easy"], generate: (id) => ({ n: id.index }) };
  protected createWorld() {
    return { calls: 0 };
  }
  protected describeTask() {
    return "echo";
  }
  protected toolset() {
    return [echo];
  }
  protected evaluate(): VerifierResult {
    return { score: 0, passed: false, details: {} };
  }
  protected snapshotWorld(w: { calls: number }): JsonValue {
    return w;
  }
  protected restoreWorld(s: JsonValue) {
    return s as { calls: number };
  }
}

export default entryFor(EchoEnv);
