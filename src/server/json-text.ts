/**
 * An answer that is already JSON text. Environment hosts serialize what they answer (a step, a new
 * session, a snapshot), so the serving thread forwards the bytes instead of parsing and serializing
 * them again; a caller that needs the value (MCP, tests) parses it once, on demand.
 */
export class JsonText<T = unknown> {
  private parsed: T | undefined;

  constructor(readonly text: string) {}

  /** The value (parsed on first use). */
  get value(): T {
    return (this.parsed ??= JSON.parse(this.text) as T);
  }

  /** Serializing a JsonText inside another value gives its value, not the wrapper. */
  toJSON(): T {
    return this.value;
  }
}
