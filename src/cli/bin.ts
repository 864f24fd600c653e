#!/usr/bin/env node
/** The `llmix` executable: runs the CLI and exits with its code. */
import { main } from "./main.js";

process.exitCode = await main(process.argv.slice(2));
