/**
 * Task samplers: which tasks a training step gets (issue 17). A sampler draws task ids over *cells* —
 * (family, difficulty) pairs of one environment — by weights that are fixed (a mix), change with the
 * training step (a schedule), or follow the results it is fed (an adaptive curriculum). Everything it
 * does comes from its own seeded stream and the results given to `observe`, and `state()` is plain JSON:
 * `restoreSampler(state)` continues with exactly the ids an uninterrupted sampler would have drawn.
 *
 * The curriculum keeps sampling where the policy is learning: a cell whose recent pass rate lies inside
 * the target band (default 0.2–0.8) is drawn at full weight, one outside it (mastered, or out of reach
 * for now) at a small one, and a cell with too few results counts as inside, so every cell is tried. An
 * exploration share spreads over all cells so none starves and a cell's rate can come back into the
 * band. This is the idea of prioritized level replay (Jiang et al., 2021) and of learning-progress
 * curricula (Portelas et al., 2020), reduced to a rule a reader can check: the band is the signal.
 */
import type { TaskFeatures } from "./features.js";
import { ValidationError } from "../core/errors.js";
import type { JsonValue } from "../core/json.js";
import { Rng, type RngState } from "../core/rng.js";
import { splitOf, type Split } from "./splits.js";
import { formatTaskId, parseTaskId } from "./task-id.js";

/** A cell's key: "family/difficulty". */
export type CellKey = string;

/** Weights over cells; a key may be a difficulty alone (then it means the sampler's default family). */
export type Weights = Readonly<Record<string, number>>;

/** A stage of a schedule: from training step `at_step` on, these weights (ramped from the previous stage when `ramp` is linear). */
export interface ScheduleStage {
  at_step: number;
  weights: Weights;
}

/**
 * Multipliers of adversarial knobs (or any declared task feature), "FEATURE=VALUE" -> weight: within a
 * cell, a task whose features match is drawn that many times as often (0: never). Needs the
 * environment's features (src/tasks/features.ts).
 */
export type Knobs = Readonly<Record<string, number>>;

/** What a sampler draws from, and how it weighs cells (`knobs` weigh tasks within a cell). */
export type SamplerSpec = (
  | { kind: "mix"; weights: Weights }
  | { kind: "schedule"; stages: readonly ScheduleStage[]; ramp?: "linear" | "step" }
  | {
      kind: "curriculum";
      /** The cells to balance (keys or bare difficulties). */
      cells: readonly string[];
      /** Target pass-rate band [low, high] (default [0.2, 0.8]). */
      band?: readonly [number, number];
      /** Results per cell the pass rate is taken over (default 32). */
      window?: number;
      /** Results a cell needs before its rate counts (default 4). */
      min_results?: number;
      /** Share of draws spread over all cells alike (default 0.1). */
      explore?: number;
      /** Weight of a cell outside the band, relative to 1 inside (default 0.05). */
      outside_weight?: number;
    }
) & { knobs?: Knobs };

/** A sampler's whole configuration: its spec, the environment's default family, split and seed. */
export interface SamplerConfig {
  spec: SamplerSpec;
  /** The family a bare difficulty key means (the environment id for the built-ins). */
  family: string;
  /** Only ids of this split are drawn (default train). */
  split?: Split;
  seed?: number;
  /** Named task sets a mix or schedule may weigh as cells "set:NAME" (ids of the sampler's family; drawn uniformly). */
  sets?: Readonly<Record<string, readonly string[]>>;
}

/** What a sampler needs at run time besides its (JSON) config. */
export interface SamplerRuntime {
  /** The features of a task id: needed when the spec has knobs. */
  features?: (taskId: string) => TaskFeatures;
}

/** A sampler's state: its config, its stream, what it has drawn and (for a curriculum) seen. */
export interface SamplerState {
  config: SamplerConfig;
  rng: RngState;
  drawn: number;
  /** Per cell, the most recent outcomes (0..1), oldest first, at most `window`. */
  results: Record<CellKey, number[]>;
}

/** The result of one sampled task, fed back to the sampler. */
export interface TaskResult {
  task_id: string;
  /** The verifier's outcome in [0, 1] (1 = passed). */
  outcome: number;
}

const DEFAULTS = { band: [0.2, 0.8] as const, window: 32, min_results: 4, explore: 0.1, outside_weight: 0.05 };
/**
 * With knobs, each candidate costs a task generation (its features), up to ~1 ms, on a thread others
 * share (the service's jobs host): a draw tries at most this many candidates (a knob set that accepts
 * less than ~1 in 100 is refused, never searched for seconds), and one call draws at most MAX_KNOB_DRAWS.
 */
export const MAX_KNOB_TRIES = 256;
export const MAX_KNOB_DRAWS = 1000;
/** Draws before a sampler gives up finding an id of its split in a cell (ids are ~90% train, ~10% eval). */
const MAX_SPLIT_TRIES = 10_000;

/** A task sampler (see the file header). */
export class TaskSampler {
  private readonly config: SamplerConfig;
  private readonly cells: CellKey[];
  private readonly rng: Rng;
  private drawn: number;
  private readonly results: Map<CellKey, number[]>;

  private readonly knobs: Array<{ feature: string; value: string; weight: number }>;
  private readonly maxKnobWeight: number;

  /** A new sampler; throws invalid_argument naming what is wrong in the spec. */
  constructor(
    config: SamplerConfig,
    state?: Omit<SamplerState, "config">,
    private readonly runtime: SamplerRuntime = {},
  ) {
    this.config = validateConfig(config);
    this.knobs = Object.entries(this.config.spec.knobs ?? {}).map(([key, weight]) => {
      const at = key.indexOf("=");
      return { feature: key.slice(0, at), value: key.slice(at + 1), weight };
    });
    if (this.knobs.length > 0 && !runtime.features) bad("knobs need the environment's task features (this caller gives none)");
    this.maxKnobWeight = Math.max(1, ...this.knobs.map((k) => k.weight));
    this.cells = cellsOf(this.config);
    if (state) checkState(state, this.cells);
    this.rng = state ? rngOf(state.rng) : Rng.fromKey("task-sampler", this.config.family, this.config.seed ?? 0);
    this.drawn = state?.drawn ?? 0;
    this.results = new Map(Object.entries(state?.results ?? {}).map(([k, v]) => [k, [...v]]));
  }

  /** The cells this sampler draws from. */
  get cellKeys(): readonly CellKey[] {
    return this.cells;
  }

  /** The weight of each cell at training step `step` (they sum to 1). */
  weights(step = 0): Record<CellKey, number> {
    const raw = this.rawWeights(step);
    const total = this.cells.reduce((sum, c) => sum + (raw[c] ?? 0), 0);
    return Object.fromEntries(this.cells.map((c) => [c, (raw[c] ?? 0) / total]));
  }

  /** Draw `n` task ids for training step `step`, from the sampler's own stream. */
  next(n: number, step = 0): string[] {
    if (!Number.isSafeInteger(n) || n < 0) throw new ValidationError("invalid_argument", `n must be an integer >= 0, got ${n}`);
    if (!Number.isSafeInteger(step) || step < 0) throw new ValidationError("invalid_argument", `step must be an integer >= 0, got ${step}`);
    if (this.knobs.length > 0 && n > MAX_KNOB_DRAWS) {
      throw new ValidationError("invalid_argument", `with knobs a sampler draws at most ${MAX_KNOB_DRAWS} tasks per call (each candidate generates a task), got n = ${n}`);
    }
    const weights = this.weights(step);
    const values = this.cells.map((c) => weights[c] as number);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(this.drawIn(this.rng.weighted(this.cells, values)));
    this.drawn += n;
    return ids;
  }

  /** Feed the outcomes of sampled tasks (only a curriculum uses them; ids of other cells are ignored). */
  observe(results: readonly TaskResult[]): void {
    const window = this.config.spec.kind === "curriculum" ? (this.config.spec.window ?? DEFAULTS.window) : DEFAULTS.window;
    for (const r of results) {
      if (typeof r.outcome !== "number" || !(r.outcome >= 0 && r.outcome <= 1)) {
        throw new ValidationError("invalid_argument", `outcome of ${String(r.task_id)} must be a number in [0, 1], got ${String(r.outcome)}`);
      }
      const { family, difficulty } = parseTaskId(r.task_id);
      const key = `${family}/${difficulty}`;
      if (!this.cells.includes(key)) continue;
      const list = this.results.get(key) ?? [];
      list.push(r.outcome);
      if (list.length > window) list.splice(0, list.length - window);
      this.results.set(key, list);
    }
  }

  /** Each cell's recent pass rate (mean outcome over its window), or null with too few results. */
  passRates(): Record<CellKey, number | null> {
    const min = this.config.spec.kind === "curriculum" ? (this.config.spec.min_results ?? DEFAULTS.min_results) : DEFAULTS.min_results;
    return Object.fromEntries(
      this.cells.map((c) => {
        const list = this.results.get(c) ?? [];
        return [c, list.length >= min ? list.reduce((a, b) => a + b, 0) / list.length : null];
      }),
    );
  }

  /** The sampler's state as JSON (see `restoreSampler`). */
  state(): SamplerState {
    return { config: this.config, rng: this.rng.state(), drawn: this.drawn, results: Object.fromEntries([...this.results].map(([k, v]) => [k, [...v]])) };
  }

  private rawWeights(step: number): Record<CellKey, number> {
    const { spec } = this.config;
    if (spec.kind === "mix") return normalizeKeys(spec.weights, this.config.family);
    if (spec.kind === "schedule") return scheduleWeights(spec, step, this.config.family);
    return this.curriculumWeights(spec);
  }

  private curriculumWeights(spec: Extract<SamplerSpec, { kind: "curriculum" }>): Record<CellKey, number> {
    const [low, high] = spec.band ?? DEFAULTS.band;
    const explore = spec.explore ?? DEFAULTS.explore;
    const outside = spec.outside_weight ?? DEFAULTS.outside_weight;
    const rates = this.passRates();
    const focus = this.cells.map((c) => {
      const rate = rates[c];
      return rate === null || (rate >= low && rate <= high) ? 1 : outside;
    });
    const focusTotal = focus.reduce((a, b) => a + b, 0);
    return Object.fromEntries(this.cells.map((c, i) => [c, (1 - explore) * ((focus[i] as number) / focusTotal) + explore / this.cells.length]));
  }

  /** A task id of the cell, in the sampler's split, accepted in proportion to its knobs' weight; or one of a named set. */
  private drawIn(cell: CellKey): string {
    if (cell.startsWith(SET_PREFIX)) return this.rng.pick(this.config.sets?.[cell.slice(SET_PREFIX.length)] ?? []);
    const [family, difficulty] = cell.split("/") as [string, string];
    const split = this.config.split ?? "train";
    let candidates = 0;
    for (let tries = 0; tries < MAX_SPLIT_TRIES; tries++) {
      const id = formatTaskId(family, difficulty, this.rng.int(0, 0x7fffffff));
      if (splitOf(id) !== split) continue;
      if (this.knobs.length === 0) return id;
      if (this.rng.float() * this.maxKnobWeight < this.knobWeight(id)) return id;
      if (++candidates >= MAX_KNOB_TRIES) {
        throw new ValidationError("invalid_argument", `knobs accepted none of ${MAX_KNOB_TRIES} ${split} tasks of ${cell}: they are too selective (a weight of 0 for every value excludes the whole cell; keep the ratio of weights under ~100)`);
      }
    }
    throw new ValidationError("invalid_argument", `no ${split} task id found in ${cell} after ${MAX_SPLIT_TRIES} draws`);
  }

  /** The product of the multipliers of the knobs the task matches (1 when it matches none). */
  private knobWeight(taskId: string): number {
    const features = (this.runtime.features as NonNullable<SamplerRuntime["features"]>)(taskId);
    let weight = 1;
    for (const knob of this.knobs) {
      if (!(knob.feature in features)) bad(`knobs: "${knob.feature}" is not a feature of these tasks; they have ${Object.keys(features).join(", ")}`);
      if (String(features[knob.feature]) === knob.value) weight *= knob.weight;
    }
    return weight;
  }
}

/** A sampler that continues from `state()` of another, drawing exactly what that one would have drawn next. */
export function restoreSampler(state: SamplerState, runtime: SamplerRuntime = {}): TaskSampler {
  if (!state || typeof state !== "object" || !state.config || !state.rng) {
    throw new ValidationError("invalid_argument", "a sampler state must be what TaskSampler.state() returned: {config, rng, drawn, results}");
  }
  return new TaskSampler(state.config, state, runtime);
}

/** The state as JSON (for a run's config or the service). */
export function samplerStateJson(sampler: TaskSampler): JsonValue {
  return sampler.state() as unknown as JsonValue;
}

// ---- weights ------------------------------------------------------------------------------------------

/** Cells of a named task set ("set:NAME"). */
const SET_PREFIX = "set:";

/** Keys as "family/difficulty" (a bare difficulty takes the default family; "set:NAME" stays). */
function normalizeKeys(weights: Weights, family: string): Record<CellKey, number> {
  const out: Record<CellKey, number> = {};
  for (const [key, weight] of Object.entries(weights)) {
    const full = key.includes("/") || key.startsWith(SET_PREFIX) ? key : `${family}/${key}`;
    out[full] = (out[full] ?? 0) + weight;
  }
  return out;
}

/** The weights of a schedule at `step`: the last stage reached, ramped toward the next one when linear. */
function scheduleWeights(spec: Extract<SamplerSpec, { kind: "schedule" }>, step: number, family: string): Record<CellKey, number> {
  const stages = spec.stages;
  let i = 0;
  while (i + 1 < stages.length && (stages[i + 1] as ScheduleStage).at_step <= step) i++;
  const current = normalizeKeys((stages[i] as ScheduleStage).weights, family);
  const next = stages[i + 1];
  if ((spec.ramp ?? "linear") === "step" || next === undefined || step < (stages[i] as ScheduleStage).at_step) return normalizedSum(current);
  const t = (step - (stages[i] as ScheduleStage).at_step) / (next.at_step - (stages[i] as ScheduleStage).at_step);
  const a = normalizedSum(current);
  const b = normalizedSum(normalizeKeys(next.weights, family));
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return Object.fromEntries([...keys].map((k) => [k, (1 - t) * (a[k] ?? 0) + t * (b[k] ?? 0)]));
}

function normalizedSum(weights: Record<CellKey, number>): Record<CellKey, number> {
  const total = Object.values(weights).reduce((a, b) => a + b, 0);
  return Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, v / total]));
}

// ---- validation ---------------------------------------------------------------------------------------

function bad(message: string): never {
  throw new ValidationError("invalid_argument", `task sampler: ${message}`);
}

function checkWeights(weights: unknown, where: string, family: string, sets: SamplerConfig["sets"]): void {
  if (!weights || typeof weights !== "object" || Array.isArray(weights)) bad(`${where} must be an object of cell -> weight, e.g. {"easy": 1, "hard": 3}`);
  const entries = Object.entries(weights as Record<string, unknown>);
  if (entries.length === 0) bad(`${where} names no cell`);
  for (const [key, value] of entries) {
    if (key.startsWith(SET_PREFIX)) checkSet(key.slice(SET_PREFIX.length), where, family, sets);
    else checkCell(key, where, family);
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) bad(`${where}.${key} must be a finite number >= 0, got ${JSON.stringify(value)}`);
  }
  if (entries.every(([, v]) => v === 0)) bad(`${where}: every weight is 0`);
}

function checkSet(name: string, where: string, family: string, sets: SamplerConfig["sets"]): void {
  const ids = sets?.[name];
  if (!Array.isArray(ids) || ids.length === 0) bad(`${where}: "set:${name}" names no task set this sampler was given (sets: ${Object.keys(sets ?? {}).join(", ") || "none"})`);
  for (const id of ids) {
    if (typeof id !== "string" || !id.startsWith(`${family}/`)) bad(`${where}: set ${name} holds ${JSON.stringify(id)}, not a task id of ${family}`);
  }
}

function checkKnobs(knobs: unknown): void {
  if (knobs === undefined) return;
  if (!knobs || typeof knobs !== "object" || Array.isArray(knobs)) bad('knobs must be an object of "FEATURE=VALUE" -> weight, e.g. {"variant=injection": 3}');
  for (const [key, value] of Object.entries(knobs as Record<string, unknown>)) {
    if (!/^[A-Za-z_][\w-]*=.+$/.test(key)) bad(`knobs: "${key}" must be FEATURE=VALUE, e.g. variant=injection`);
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1e6) bad(`knobs.${key} must be a number in [0, 1000000], got ${JSON.stringify(value)}`);
  }
}

function checkCell(key: string, where: string, family: string): void {
  const full = key.includes("/") ? key : `${family}/${key}`;
  try {
    parseTaskId(`${full}/seed-0`);
  } catch {
    bad(`${where}: "${key}" is not a cell (a difficulty like "hard", or "family/difficulty")`);
  }
}

function validateConfig(config: SamplerConfig): SamplerConfig {
  if (!config || typeof config !== "object") bad("config must be {spec, family, split?, seed?}");
  const { spec, family } = config;
  if (typeof family !== "string" || family === "") bad("family must be the environment's family (its id for the built-ins)");
  if (config.split !== undefined && config.split !== "train" && config.split !== "eval") bad(`split must be train or eval, got ${JSON.stringify(config.split)}`);
  if (config.seed !== undefined && !Number.isSafeInteger(config.seed)) bad(`seed must be an integer, got ${JSON.stringify(config.seed)}`);
  if (!spec || typeof spec !== "object") bad('spec must be {"kind": "mix" | "schedule" | "curriculum", ...}');
  switch (spec.kind) {
    case "mix":
      checkWeights(spec.weights, "weights", family, config.sets);
      break;
    case "schedule": {
      if (!Array.isArray(spec.stages) || spec.stages.length === 0) bad("a schedule needs stages: [{at_step, weights}, ...]");
      spec.stages.forEach((stage, i) => {
        if (!stage || !Number.isSafeInteger(stage.at_step) || stage.at_step < 0) bad(`stages[${i}].at_step must be an integer >= 0`);
        if (i > 0 && stage.at_step <= (spec.stages[i - 1] as ScheduleStage).at_step) bad(`stages[${i}].at_step must be after stages[${i - 1}].at_step`);
        checkWeights(stage.weights, `stages[${i}].weights`, family, config.sets);
      });
      if (spec.ramp !== undefined && spec.ramp !== "linear" && spec.ramp !== "step") bad(`ramp must be linear or step, got ${JSON.stringify(spec.ramp)}`);
      break;
    }
    case "curriculum": {
      if (!Array.isArray(spec.cells) || spec.cells.length === 0) bad('a curriculum needs cells, e.g. ["easy", "medium", "hard"]');
      spec.cells.forEach((c) => (typeof c === "string" ? checkCell(c, "cells", family) : bad("cells must be strings")));
      const band = spec.band ?? DEFAULTS.band;
      if (!Array.isArray(band) || band.length !== 2 || !(band[0] >= 0 && band[0] < band[1] && band[1] <= 1)) bad(`band must be [low, high] with 0 <= low < high <= 1, got ${JSON.stringify(spec.band)}`);
      for (const [name, value, min, max] of [
        ["window", spec.window, 1, 100_000],
        ["min_results", spec.min_results, 1, 100_000],
      ] as const) {
        if (value !== undefined && (!Number.isSafeInteger(value) || value < min || value > max)) bad(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`);
      }
      for (const [name, value] of [
        ["explore", spec.explore],
        ["outside_weight", spec.outside_weight],
      ] as const) {
        if (value !== undefined && !(typeof value === "number" && value >= 0 && value <= 1)) bad(`${name} must be a number in [0, 1], got ${JSON.stringify(value)}`);
      }
      break;
    }
    default:
      bad(`unknown kind ${JSON.stringify((spec as { kind?: unknown }).kind)}; valid: mix, schedule, curriculum`);
  }
  checkKnobs(spec.knobs);
  return config;
}

/** A state's stream, or invalid_argument (a sampler state comes from a client, not a snapshot). */
function rngOf(state: RngState): Rng {
  try {
    return Rng.fromState(state);
  } catch (error) {
    bad(`state.rng: ${(error as Error).message}`);
  }
}

/** A state's counters and results are what `state()` writes: numbers in range, for this sampler's cells. */
function checkState(state: Omit<SamplerState, "config">, cells: readonly CellKey[]): void {
  if (!Number.isSafeInteger(state.drawn) || state.drawn < 0) bad(`state.drawn must be an integer >= 0, got ${JSON.stringify(state.drawn)}`);
  if (!state.results || typeof state.results !== "object" || Array.isArray(state.results)) bad("state.results must be an object of cell -> outcomes");
  for (const [cell, outcomes] of Object.entries(state.results)) {
    if (!cells.includes(cell)) bad(`state.results has ${JSON.stringify(cell)}, not a cell of this sampler`);
    if (!Array.isArray(outcomes) || outcomes.length > 100_000 || !outcomes.every((o) => typeof o === "number" && o >= 0 && o <= 1)) {
      bad(`state.results["${cell}"] must be at most 100000 outcomes in [0, 1]`);
    }
  }
}

/** Most cells a sampler balances: a spec comes from clients, and every draw weighs every cell. */
export const MAX_CELLS = 1000;

function cellsOf(config: SamplerConfig): CellKey[] {
  const { spec, family } = config;
  const keys =
    spec.kind === "mix"
      ? Object.keys(normalizeKeys(spec.weights, family))
      : spec.kind === "schedule"
        ? spec.stages.flatMap((s) => Object.keys(normalizeKeys(s.weights, family)))
        : spec.cells.map((c) => (c.includes("/") ? c : `${family}/${c}`));
  const cells = [...new Set(keys)];
  if (cells.length > MAX_CELLS) bad(`${cells.length} cells; at most ${MAX_CELLS}`);
  return cells;
}

// ---- dynamic sampling ---------------------------------------------------------------------------------

/** What `dropFlatGroups` kept and dropped. */
export interface DynamicSamplingReport<G> {
  kept: G[];
  dropped: G[];
  /** Dropped groups by pass rate ("0" = every member failed, "1" = every member passed, else the rate). */
  dropped_by_pass_rate: Record<string, number>;
}

/**
 * DAPO's dynamic sampling (Yu et al., 2025): a GRPO group whose rewards are all equal has zero advantage
 * everywhere and teaches nothing, so it is dropped (the caller samples more to refill the batch).
 * `rewards` gives each group's rewards; `outcomes` its members' outcomes, for the report.
 */
export function dropFlatGroups<G>(groups: readonly G[], rewards: (g: G) => readonly number[], outcomes: (g: G) => readonly number[]): DynamicSamplingReport<G> {
  const kept: G[] = [];
  const dropped: G[] = [];
  const byRate: Record<string, number> = {};
  for (const group of groups) {
    const r = rewards(group);
    if (r.length > 0 && r.every((x) => Math.abs(x - (r[0] as number)) <= 1e-12)) {
      dropped.push(group);
      const o = outcomes(group);
      const rate = o.length === 0 ? 0 : o.reduce((a, b) => a + b, 0) / o.length;
      const key = String(Math.round(rate * 1000) / 1000);
      byRate[key] = (byRate[key] ?? 0) + 1;
    } else {
      kept.push(group);
    }
  }
  return { kept, dropped, dropped_by_pass_rate: byRate };
}
