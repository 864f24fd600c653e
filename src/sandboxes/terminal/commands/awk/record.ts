/**
 * The current record: $0 and its fields. Fields are split on first use, with the FS in force when the
 * record was read (POSIX); assigning a field or NF rebuilds $0 with OFS (charged and capped), and
 * fields past NF read as "" that never looks numeric (as in gawk).
 */
import type { WorkBudget } from "../../limits.js";
import type { Pos } from "./ast.js";
import { AwkRuntimeError, MAX_FIELDS, MAX_STRING_LENGTH } from "./errors.js";
import { splitFields, type FieldSplitter } from "./records.js";
import { EMPTY_FIELD, StrNum, type Value } from "./values.js";

/** What the record needs from the interpreter. */
export interface RecordContext {
  budget: WorkBudget;
  /** String value of a field (numbers through CONVFMT). */
  toStr(v: Value): string;
  /** The output field separator in force. */
  ofs(): string;
  /** True in paragraph mode (RS ""), where a newline always separates fields. */
  paragraph(): boolean;
  /** Refuses a string longer than MAX_STRING_LENGTH. */
  checkLength(length: number): void;
}

export class CurrentRecord {
  /** $0. */
  text = "";
  private value: StrNum | null = null;
  /** $1..$NF, or null until split. */
  private fields: Value[] | null = [];
  private count = 0;
  private splitter: FieldSplitter = { kind: "blank" };

  constructor(private readonly ctx: RecordContext) {}

  /** Sets $0 (read or assigned); its fields will be split with `fs`. */
  set(text: string, fs: FieldSplitter): void {
    this.text = text;
    this.value = null;
    this.fields = null;
    this.splitter = fs;
  }

  /** NF. */
  get nf(): number {
    this.split();
    return this.count;
  }

  /** $i (i ≥ 0). */
  field(i: number): Value {
    if (i === 0) return (this.value ??= new StrNum(this.text));
    const fields = this.split();
    return i <= this.count ? fields[i - 1] : EMPTY_FIELD;
  }

  /** $i = v for i ≥ 1 (the caller handles $0): grows NF if needed and rebuilds $0. */
  assign(i: number, v: Value): void {
    const fields = this.split();
    if (i > this.count) this.grow(i);
    fields[i - 1] = v;
    this.rebuild();
  }

  /** NF = value: cuts or grows the fields, and rebuilds $0. */
  setNF(value: number, at: Pos): void {
    const n = Math.trunc(value);
    if (!(n >= 0)) throw new AwkRuntimeError(`NF set to a negative value (${value})`, at);
    this.split();
    if (n > this.count) this.grow(n);
    else {
      this.fields!.length = n;
      this.count = n;
    }
    this.rebuild();
  }

  private split(): Value[] {
    if (this.fields === null) {
      const parts = splitFields(this.text, this.splitter, this.ctx.paragraph(), this.ctx.budget);
      const fields: Value[] = new Array(parts.length);
      for (let k = 0; k < parts.length; k++) fields[k] = new StrNum(parts[k]);
      this.fields = fields;
      this.count = fields.length;
    }
    return this.fields;
  }

  private grow(n: number): void {
    if (n > MAX_FIELDS) this.ctx.budget.refuse("maxAwkFields", `too many fields (${n}; the limit is ${MAX_FIELDS})`, { max: MAX_FIELDS, size: n });
    this.ctx.budget.charge(n - this.count);
    const fields = this.fields!;
    for (let k = this.count; k < n; k++) fields.push(EMPTY_FIELD);
    this.count = n;
  }

  /** $0 from the fields joined by OFS (after a field or NF was assigned). */
  private rebuild(): void {
    const fields = this.fields!;
    const ofs = this.ctx.ofs();
    let text = "";
    for (let k = 0; k < this.count; k++) {
      const piece = this.ctx.toStr(fields[k]);
      text += k === 0 ? piece : ofs + piece;
      if (text.length > MAX_STRING_LENGTH) this.ctx.checkLength(text.length);
    }
    this.ctx.budget.charge(text.length + 3 * this.count);
    this.text = text;
    this.value = null;
  }
}
