/**
 * The web tools over a WebSession (src/sandboxes/web): click, fill, select, press, goto, back, scroll —
 * one declaration any web environment reuses, so injected failures (an HTTP 500 is the `error` failure,
 * a slow page the `timeout` one), latency and cost pass the same middleware as every tool. Each returns
 * the page after the gesture as the observation text: `[id] role "name"` lines, ids in brackets.
 *
 * Usage: `const tools = webTools<World, Task>({ session: (world) => world.web });`
 */
import { z } from "zod";
import type { JsonValue } from "../core/json.js";
import { MAX_FILL_LENGTH, PRESS_KEYS, type WebAction, type WebSession } from "../sandboxes/web/session.js";
import { MAX_URL_LENGTH } from "../sandboxes/web/url.js";
import { toolsFor, type AnyTool, type ToolContext } from "./define.js";
import type { FailureProfile, LatencyModel } from "./profile.js";

/** Options of `webTools`. Only `session` is required. */
export interface WebToolsOptions<World, Task> {
  /** The episode's web session (usually a field of the world). */
  session: (world: World, ctx: ToolContext<World, Task>) => WebSession;
  /** Virtual latency of a page load (click, press, goto, back). Default fixed 150 ms. */
  latency?: LatencyModel;
  /** Injected failures of page loads. Default none. */
  failures?: FailureProfile;
}

const ID = z.string().min(1).max(12).describe('The element id: the number in brackets before the element, e.g. "12"');

/** Declare the seven web tools over the episode's WebSession. */
export function webTools<World, Task>(options: WebToolsOptions<World, Task>): AnyTool<World, Task>[] {
  const defineTool = toolsFor<World, Task>();
  const latency = options.latency ?? { kind: "fixed", ms: 150 };
  const load = { latency, ...(options.failures ? { failures: options.failures } : {}) };
  const run = async (action: WebAction, ctx: ToolContext<World, Task>): Promise<JsonValue> => (await options.session(ctx.world, ctx).act(action)).rendered;
  const render = (output: JsonValue): string => (typeof output === "string" ? output : JSON.stringify(output));
  return [
    defineTool({
      name: "click",
      description: "Click an element of the page by its id: follows a link, presses a button (submitting its form), toggles a checkbox or radio button. Returns the page after the click.",
      input: z.strictObject({ id: ID }),
      effect: "write",
      ...load,
      handler: ({ id }, ctx) => run({ kind: "click", id }, ctx),
      render,
    }),
    defineTool({
      name: "fill",
      description: "Replace the text of a text box by its id (nothing is submitted until you click a button or press Enter). Returns the page.",
      input: z.strictObject({ id: ID, text: z.string().max(MAX_FILL_LENGTH).describe("The text to type") }),
      effect: "write",
      latency: { kind: "fixed", ms: 20 },
      handler: ({ id, text }, ctx) => run({ kind: "fill", id, text }, ctx),
      render,
    }),
    defineTool({
      name: "select",
      description: "Choose an option of a drop-down (combobox) by its id and the option's text as listed. Returns the page.",
      input: z.strictObject({ id: ID, option: z.string().min(1).max(200).describe("The option's text, as listed in options=[...]") }),
      effect: "write",
      latency: { kind: "fixed", ms: 20 },
      handler: ({ id, option }, ctx) => run({ kind: "select", id, option }, ctx),
      render,
    }),
    defineTool({
      name: "press",
      description: `Press a key (${PRESS_KEYS.join(", ")}) in an element by its id, or in the element last used. Enter in a text box submits its form. Returns the page.`,
      input: z.strictObject({ key: z.enum(PRESS_KEYS), id: ID.optional() }),
      effect: "write",
      ...load,
      handler: ({ key, id }, ctx) => run({ kind: "press", key, ...(id !== undefined ? { id } : {}) }, ctx),
      render,
    }),
    defineTool({
      name: "goto",
      description: "Open a page of this site by its path, e.g. /search?q=boots. Other sites cannot be opened. Returns the page.",
      input: z.strictObject({ url: z.string().min(1).max(MAX_URL_LENGTH).describe("A path of this site, e.g. /orders") }),
      effect: "read",
      ...load,
      handler: ({ url }, ctx) => run({ kind: "goto", url }, ctx),
      render,
    }),
    defineTool({
      name: "back",
      description: "Go back to the previous page of this tab's history. Returns that page, as it is now.",
      input: z.strictObject({}),
      effect: "read",
      ...load,
      handler: (_args, ctx) => run({ kind: "back" }, ctx),
      render,
    }),
    defineTool({
      name: "scroll",
      description: "Scroll the page up or down by a screen. Returns the page at the new position.",
      input: z.strictObject({ direction: z.enum(["up", "down"]) }),
      effect: "read",
      handler: ({ direction }, ctx) => run({ kind: "scroll", direction }, ctx),
      render,
    }),
  ];
}
