#!/usr/bin/env node
/** The `llmix` executable: runs the CLI and exits with its code. */
import { main } from "./main.js";

// A reader that stops early (`llmix tasks … | head -1`) closes the pipe: that is the reader's choice, not
// our failure, so stop quietly as the coreutils do rather than die with a stack trace on EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

process.exitCode = await main(process.argv.slice(2));
