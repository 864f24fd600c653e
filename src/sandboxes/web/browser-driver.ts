/**
 * The browser driver: the app served on loopback HTTP and driven in Chromium through playwright-core
 * (Debian's /usr/bin/chromium, or LLMIX_CHROMIUM). It is for evaluation, screenshots, and proving the
 * fast driver faithful; training uses the fast driver. One Chromium per process is shared by every
 * session (each gets its own browser context: no cookies, cache or storage shared), and every page
 * request goes to the app in this process, so a session's world is the same object under both drivers.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { LlmixError, SandboxError } from "../../core/errors.js";
import { renderDocument, type WebApp, type WebRequest } from "./app.js";
import { captureDom } from "./dom.js";
import type { ControlEdit, DriverPage, WebDriver } from "./driver.js";

/** Chromium's path: LLMIX_CHROMIUM, else Debian's. */
export function chromiumPath(): string {
  return process.env.LLMIX_CHROMIUM ?? "/usr/bin/chromium";
}

/** Chromium's flags: without the networking ones it tries Google's hosts at every start (refused on closed networks). */
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"];
/** Longest a single browser gesture may take before it is an error (a page that never loads). */
const ACTION_TIMEOUT_MS = 10_000;
/** Largest form body the loopback server reads. */
const MAX_BODY_BYTES = 256 * 1024;

let shared: Promise<Browser> | null = null;

/** The process's Chromium, started on first use; a visible window when LLMIX_BROWSER_HEADED=1 (`llmix play --browser` on a display). */
async function browser(): Promise<Browser> {
  // playwright-core takes ~1 s to import: loaded on first use, not by every `import "llmix-rl"`.
  shared ??= import("playwright-core").then(({ chromium }) => chromium.launch({ executablePath: chromiumPath(), headless: process.env.LLMIX_BROWSER_HEADED !== "1", args: CHROMIUM_ARGS })).catch((error: unknown) => {
    shared = null;
    throw new SandboxError("browser_unavailable", `Chromium could not start from ${chromiumPath()} (install Debian's chromium, or set LLMIX_CHROMIUM): ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
  });
  const b = await shared;
  if (!b.isConnected()) {
    shared = null;
    return browser();
  }
  return b;
}

/** Close the shared Chromium (tests, process exit). */
export async function closeSharedBrowser(): Promise<void> {
  const b = shared;
  shared = null;
  if (b) await (await b.catch(() => null))?.close();
}

export class BrowserDriver implements WebDriver {
  readonly kind = "browser" as const;
  private server: Server | null = null;
  private origin = "";
  private context: BrowserContext | null = null;
  private page: Page | null = null;
  private status = 200;
  private loads = 0;

  private constructor(private readonly app: WebApp) {}

  /** Start a loopback server for the app and a page in the shared Chromium. */
  static async start(app: WebApp, viewport = { width: 1280, height: 900 }): Promise<BrowserDriver> {
    const driver = new BrowserDriver(app);
    await driver.listen();
    try {
      driver.context = await (await browser()).newContext({ viewport, javaScriptEnabled: false, serviceWorkers: "block" });
      driver.page = await driver.context.newPage();
      driver.page.setDefaultTimeout(ACTION_TIMEOUT_MS);
      // Only the app's origin is reachable: any other request the page makes is aborted.
      await driver.context.route("**/*", (route) => (route.request().url().startsWith(driver.origin + "/") ? route.continue() : route.abort("blockedbyclient")));
      driver.page.on("response", (response) => {
        if (response.request().isNavigationRequest() && response.frame() === driver.page?.mainFrame()) driver.status = response.status();
      });
      driver.page.on("framenavigated", (frame) => {
        if (frame === driver.page?.mainFrame()) driver.loads++;
      });
    } catch (error) {
      await driver.close();
      throw error;
    }
    return driver;
  }

  async open(url: string): Promise<void> {
    await this.guard(() => this.tab().goto(this.origin + url, { waitUntil: "load" }));
  }

  async click(bid: string): Promise<void> {
    await this.guard(async () => {
      await this.tab().click(selector(bid));
      await this.tab().waitForLoadState("load");
    });
  }

  async edit(edit: ControlEdit): Promise<void> {
    await this.guard(async () => {
      const locator = this.tab().locator(selector(edit.bid));
      if ("fill" in edit) await locator.fill(edit.fill);
      else if ("checked" in edit) await locator.setChecked(edit.checked);
      else await locator.selectOption({ label: edit.option });
    });
  }

  async pressEnter(bid: string): Promise<void> {
    await this.guard(async () => {
      await this.tab().press(selector(bid), "Enter");
      await this.tab().waitForLoadState("load");
    });
  }

  async capture(): Promise<DriverPage> {
    const { title, root } = await this.guard(() => this.tab().evaluate<ReturnType<typeof captureDom>>(CAPTURE_EXPRESSION));
    const url = new URL(this.tab().url());
    return { url: url.pathname + url.search, status: this.status, title, root, loads: this.loads };
  }

  async screenshot(): Promise<Buffer> {
    return this.guard(() => this.tab().screenshot({ type: "png" }));
  }

  async close(): Promise<void> {
    await this.context?.close().catch(() => undefined);
    this.context = null;
    this.page = null;
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private tab(): Page {
    if (this.page === null) throw new SandboxError("browser_unavailable", "the browser page is closed");
    return this.page;
  }

  /** Browser failures (a timeout, a crashed page) become typed errors naming what failed. */
  private async guard<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof LlmixError) throw error;
      throw new SandboxError("browser_unavailable", `the browser failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
    }
  }

  private async listen(): Promise<void> {
    this.server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", () => resolve()));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** One HTTP request to the app: the same WebRequest the fast driver builds, answered the same way. */
  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const headers = { "cache-control": "no-store", "content-type": "text/html; charset=utf-8" };
    try {
      if (req.method !== "GET" && req.method !== "POST") {
        res.writeHead(405, headers).end();
        return;
      }
      let body = "";
      for await (const chunk of req) {
        body += String(chunk);
        if (body.length > MAX_BODY_BYTES) throw new Error("form body too large");
      }
      const request: WebRequest = { method: req.method, url: req.url ?? "/", form: req.method === "POST" ? [...new URLSearchParams(body)] : [] };
      const response = this.app.handle(request);
      if (response.kind === "redirect") res.writeHead(303, { ...headers, location: response.location }).end();
      else res.writeHead(response.status, headers).end(renderDocument(response));
    } catch (error) {
      res.writeHead(500, headers).end(`<!DOCTYPE html><title>Error</title><p>${error instanceof Error ? "server error" : ""}</p>`);
    }
  }
}

// The capture's source, run in the page. Transpilers that keep function names (tsx, vitest) wrap
// functions in a `__name` helper the page does not have, so the expression defines it.
const CAPTURE_EXPRESSION = `(() => { const __name = (f) => f; return (${captureDom.toString()})(); })()`;

function selector(bid: string): string {
  return `[data-bid="${bid.replace(/["\\]/g, "\\$&")}"]`;
}
