/**
 * Seeded behaviour profiles of a tool: injected failures, latency distributions and cost. They are
 * drawn from the episode's tool stream, so a failure seen once is seen again on replay (DESIGN §3).
 */
import { z } from "zod";
import type { JsonValue } from "../core/json.js";
import type { Rng } from "../core/rng.js";

/** Probabilities (each in [0, 1], summing to at most 1) that a call fails in a given way. */
export const FailureProfileSchema = z
  .object({
    /** The call hangs until `timeoutMs` and returns status `timeout`. */
    timeout: z.number().min(0).max(1).default(0),
    /** A 5xx-style server error: status `error`, nothing runs. */
    error: z.number().min(0).max(1).default(0),
    /** 429 rate limit: status `error` with a retry-after hint, nothing runs. */
    rateLimit: z.number().min(0).max(1).default(0),
    /** The handler runs but its output is cut short (status `ok`, `partial: true`). */
    partial: z.number().min(0).max(1).default(0),
    /** How long a timed-out call takes, in virtual milliseconds. */
    timeoutMs: z.number().positive().default(30_000),
  })
  .strict()
  .refine((p) => p.timeout + p.error + p.rateLimit + p.partial <= 1 + 1e-9, {
    message: "failure probabilities must sum to at most 1",
  });

export type FailureProfile = z.input<typeof FailureProfileSchema>;
export type ResolvedFailureProfile = z.output<typeof FailureProfileSchema>;

/** Latency of a successful call, in virtual milliseconds. */
export const LatencyModelSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("fixed"), ms: z.number().min(0) }).strict(),
  z.object({ kind: z.literal("uniform"), minMs: z.number().min(0), maxMs: z.number().min(0) }).strict()
    .refine((m) => m.maxMs >= m.minMs, { message: "uniform latency needs maxMs >= minMs" }),
  z.object({ kind: z.literal("lognormal"), medianMs: z.number().positive(), sigma: z.number().min(0) }).strict(),
]);

export type LatencyModel = z.infer<typeof LatencyModelSchema>;

/** Cost of one call that ran: a constant or a function of its arguments and output. */
export type CostModel = number | ((args: never, output: JsonValue) => number);

/** Per-task overrides of a tool's profiles, keyed by tool name. */
export interface ToolProfileOverride {
  failures?: FailureProfile;
  latency?: LatencyModel;
  cost?: number;
}
export type ToolOverrides = Record<string, ToolProfileOverride>;

/** The kinds of injected failure. */
export type InjectedFailure = "timeout" | "error" | "rate_limit" | "partial";

/** Draw which failure (if any) this call suffers. Always consumes exactly one number, so streams stay aligned. */
export function drawFailure(profile: ResolvedFailureProfile, rng: Rng): InjectedFailure | null {
  const u = rng.float();
  let edge = profile.timeout;
  if (u < edge) return "timeout";
  edge += profile.error;
  if (u < edge) return "error";
  edge += profile.rateLimit;
  if (u < edge) return "rate_limit";
  edge += profile.partial;
  if (u < edge) return "partial";
  return null;
}

/** Draw a latency. Always consumes exactly two numbers, whatever the model. */
export function drawLatency(model: LatencyModel, rng: Rng): number {
  const a = rng.float();
  const b = rng.float();
  switch (model.kind) {
    case "fixed":
      return model.ms;
    case "uniform":
      return Math.round(model.minMs + a * (model.maxMs - model.minMs));
    case "lognormal": {
      // Box-Muller on the two draws; exp keeps the median at medianMs.
      const z = Math.sqrt(-2 * Math.log(1 - a)) * Math.cos(2 * Math.PI * b);
      return Math.round(model.medianMs * Math.exp(model.sigma * z));
    }
  }
}
