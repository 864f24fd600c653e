/**
 * Where an export is written. Every format writes to a temporary file next to `out` and renames it into
 * place only when the export succeeded, so a failed or interrupted export never leaves a truncated file
 * that a trainer could mistake for a complete dataset (and never clobbers the previous one).
 */
import { randomBytes } from "node:crypto";
import { open, rename, stat, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { ByteWriter } from "hyparquet-writer";
import { LlmixError } from "../../core/errors.js";

/** Writes are batched to about this many characters: few syscalls, bounded memory. */
const CHUNK_CHARS = 1 << 20;

/** An fs failure as the typed error every caller sees: store_error, with the path and the OS code. */
export function storeError(out: string, error: unknown): LlmixError {
  const err = error as NodeJS.ErrnoException;
  const reason = err?.code ? `${err.code}: ${err.message}` : String(error);
  return new LlmixError("store_error", `cannot write export to "${out}": ${reason}`, { path: out, cause: err?.code ?? null });
}

/** A temporary output file that becomes `out` on commit. */
export class ExportFile {
  private chunks: string[] = [];
  private chars = 0;
  private closed = false;

  private constructor(
    readonly out: string,
    private readonly tmp: string,
    private readonly handle: FileHandle,
  ) {}

  /** Open a temporary file beside `out`; fails up front (store_error) when `out` cannot be written. */
  static async open(out: string): Promise<ExportFile> {
    // Checked before any work: renaming onto a directory would only fail after the whole export.
    const existing = await stat(out).catch(() => undefined);
    if (existing?.isDirectory()) {
      throw new LlmixError("store_error", `cannot write export to "${out}": it is a directory`, { path: out, cause: "EISDIR" });
    }
    const tmp = join(dirname(out), `.${basename(out)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
    try {
      return new ExportFile(out, tmp, await open(tmp, "wx"));
    } catch (error) {
      throw storeError(out, error);
    }
  }

  /** Queue text; it reaches the disk in ~1 MB batches. */
  async write(text: string): Promise<void> {
    this.chunks.push(text);
    this.chars += text.length;
    if (this.chars >= CHUNK_CHARS) await this.flushText();
  }

  /** Write bytes now (the caller may reuse its buffer once this resolves). */
  async writeBytes(bytes: Uint8Array): Promise<void> {
    await this.flushText();
    try {
      await this.handle.write(bytes);
    } catch (error) {
      throw storeError(this.out, error);
    }
  }

  /** Flush, close and move the file into place; returns its size in bytes. */
  async commit(): Promise<number> {
    await this.flushText();
    try {
      await this.handle.sync();
      await this.close();
      await rename(this.tmp, this.out);
      return (await stat(this.out)).size;
    } catch (error) {
      await this.abort();
      throw storeError(this.out, error);
    }
  }

  /** Drop the temporary file (after a failure). Never throws: the original error is what matters. */
  async abort(): Promise<void> {
    await this.close().catch(() => undefined);
    await unlink(this.tmp).catch(() => undefined);
  }

  private async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.handle.close();
  }

  private async flushText(): Promise<void> {
    if (this.chunks.length === 0) return;
    const text = this.chunks.join("");
    this.chunks = [];
    this.chars = 0;
    try {
      await this.handle.write(text);
    } catch (error) {
      throw storeError(this.out, error);
    }
  }
}

/**
 * A hyparquet-writer sink that hands each finished row group to an ExportFile. The parquet writer awaits
 * `flush` before encoding the next row group, so only one row group's bytes are ever held in memory.
 */
export class ParquetSink extends ByteWriter {
  constructor(private readonly file: ExportFile) {
    super(1 << 16);
  }

  flush(): Promise<void> {
    const bytes = new Uint8Array(this.buffer, 0, this.index);
    // The buffer is reused from index 0 only after this write resolved (the writer awaits flush).
    this.index = 0;
    return this.file.writeBytes(bytes);
  }

  override finish(): Promise<void> {
    return this.flush();
  }

  override getBuffer(): ArrayBuffer {
    throw new Error("ParquetSink streams to a file: it has no buffer to return");
  }
}
