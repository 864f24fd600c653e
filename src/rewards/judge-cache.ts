/**
 * Where rubric judgements are kept (judge.ts): by the hash of what was judged — the model, the rubric
 * and the rendered input — so a replay, a `reverify` or a second rollout of the same trajectory gets
 * the same verdict without calling the model again. A SQLite file (shared by the threads and processes
 * of one machine: WAL, and a judgement is written once, first writer wins) or memory for tests.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { LlmixError } from "../core/errors.js";
import type { JudgeVerdict } from "./judge.js";

/** A store of judgements by key. */
export interface JudgeCache {
  get(key: string): JudgeVerdict | undefined;
  /** Keep a verdict; a key already kept keeps its first verdict (judgements never change once made). */
  put(key: string, verdict: JudgeVerdict): void;
  close(): void;
}

/** Judgements in memory (tests, one-off scripts). */
export class MemoryJudgeCache implements JudgeCache {
  private readonly entries = new Map<string, JudgeVerdict>();

  get(key: string): JudgeVerdict | undefined {
    return this.entries.get(key);
  }

  put(key: string, verdict: JudgeVerdict): void {
    if (!this.entries.has(key)) this.entries.set(key, verdict);
  }

  close(): void {}

  /** Judgements kept. */
  get size(): number {
    return this.entries.size;
  }
}

/** Judgements in a SQLite file (created with its directory when missing). */
export class SqliteJudgeCache implements JudgeCache {
  private readonly db: Database.Database;
  private readonly select: Database.Statement<[string], { verdict: string }>;
  private readonly insert: Database.Statement<[string, string, string, string, string]>;

  constructor(path: string) {
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      this.db = new Database(path);
      this.db.pragma("journal_mode = WAL");
      this.db.pragma("busy_timeout = 5000");
      this.db.exec(`CREATE TABLE IF NOT EXISTS judgements (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, rubric TEXT NOT NULL, verdict TEXT NOT NULL, created_at TEXT NOT NULL
      )`);
    } catch (error) {
      throw new LlmixError("store_error", `judge cache ${path}: ${(error as Error).message}`);
    }
    this.select = this.db.prepare("SELECT verdict FROM judgements WHERE key = ?");
    this.insert = this.db.prepare("INSERT OR IGNORE INTO judgements (key, model, rubric, verdict, created_at) VALUES (?, ?, ?, ?, ?)");
  }

  get(key: string): JudgeVerdict | undefined {
    const row = this.select.get(key);
    return row ? (JSON.parse(row.verdict) as JudgeVerdict) : undefined;
  }

  put(key: string, verdict: JudgeVerdict): void {
    this.insert.run(key, verdict.model, verdict.rubric, JSON.stringify(verdict), new Date().toISOString());
  }

  close(): void {
    this.db.close();
  }
}
