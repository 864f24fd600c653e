/**
 * `llmix ui`: the trajectory inspector on a store. It is `llmix serve` (same service, API and auth) with
 * the inspector mounted at /ui/, one environment host (the inspector's only jobs are replays and task
 * lookups, on demand) and its own default port, so it can run beside a `llmix serve`. It prints the
 * inspector's address and runs until SIGINT/SIGTERM.
 */
import { spawn } from "node:child_process";
import type { Command } from "commander";
import { registerInspector } from "../server/inspector.js";
import { startServer, stopOnSignals, SERVE_DEFAULTS } from "../server/serve.js";
import { displayStore } from "../store/open.js";
import { integer, moduleOption, print, registryWith, storeOption } from "./options.js";

/** Defaults of `llmix ui`: serve's, on the next port. */
export const UI_DEFAULTS = { host: SERVE_DEFAULTS.host, port: SERVE_DEFAULTS.port + 1, storePath: SERVE_DEFAULTS.storePath } as const;

interface UiFlags {
  host: string;
  port: number;
  store: string;
  auth?: string;
  dataPolicy?: string;
  open?: boolean;
  module?: string[];
}

/** Open a URL in the desktop's browser, if there is one; failing to is not an error (the URL is printed). */
function openInBrowser(url: string): void {
  const [command, args] = process.platform === "darwin" ? ["open", [url]] : process.platform === "win32" ? ["cmd", ["/c", "start", "", url]] : ["xdg-open", [url]];
  try {
    const child = spawn(command, args, { stdio: "ignore", detached: true });
    child.on("error", () => process.stderr.write(`llmix ui: could not open a browser (${command}); open ${url} yourself\n`));
    child.unref();
  } catch {
    process.stderr.write(`llmix ui: could not open a browser; open ${url} yourself\n`);
  }
}

/** Add `llmix ui` to the program. */
export function registerUiCommand(program: Command): void {
  program
    .command("ui")
    .description("browse runs and episodes of a trajectory store in the inspector (a web page at /ui/)")
    .addOption(storeOption())
    .option("--port <port>", "TCP port (0 picks a free one)", integer("--port", 0, 65_535), UI_DEFAULTS.port)
    .option("--host <host>", "interface to bind; anything but loopback needs --auth", UI_DEFAULTS.host)
    .option("--auth <file>", "bearer tokens, as `llmix serve --auth` takes them (the page asks for one, or takes it from #token=... in its address)")
    .option("--data-policy <file>", "the deployment's data policy, as `llmix serve --data-policy` takes it (tenants see their own runs); replaces --auth")
    .option("--open", "open the inspector in the desktop's browser")
    .addOption(moduleOption())
    .action(async (flags: UiFlags) => {
      const registry = await registryWith(flags.module);
      const server = await startServer({
        registry, host: flags.host, port: flags.port, storePath: flags.store, authPath: flags.auth, policyPath: flags.dataPolicy, hosts: 1, logger: true,
        extraRoutes: (app) => registerInspector(app),
      });
      const stopped = stopOnSignals(server);
      const url = `${server.url}/ui/`;
      print(`inspector: ${url}`);
      process.stderr.write(
        server.authenticated
          ? `llmix ui: store ${displayStore(flags.store)}; the page asks for a token with trajectories:read (or give it in the address: ${url}#token=...)\n`
          : `llmix ui: store ${displayStore(flags.store)}; no --auth: loopback only\n`,
      );
      if (flags.open) openInBrowser(url);
      await stopped;
    });
}
