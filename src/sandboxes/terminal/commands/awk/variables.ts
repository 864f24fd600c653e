/**
 * awk variables and arrays. A variable is a Cell: a scalar, an array, or, for a function parameter
 * given a variable never used yet, a reference to the caller's variable (awk passes arrays by
 * reference, and an untyped variable becomes an array in the caller when the callee uses it as one).
 * Arrays are JS Maps, so `for (k in a)` visits keys in insertion order; the elements alive in all
 * arrays are counted and capped, since each costs memory no input paid for.
 */
import type { WorkBudget } from "../../limits.js";
import type { Pos } from "./ast.js";
import { AwkRuntimeError, INSERT_COST, MAX_ARRAY_ELEMENTS } from "./errors.js";
import { UNINIT, type Value } from "./values.js";

export type AwkArray = Map<string, Value>;

/** A variable: a scalar, an array, or (a parameter passed an untyped variable) a reference to the caller's. */
export class Cell {
  value: Value = UNINIT;
  array: AwkArray | null = null;
  /** The caller's untyped variable this parameter stands for until it is used as an array. */
  ref: Cell | null = null;
  /** The array belongs to another variable (passed by reference); it is not freed with this frame. */
  borrowed = false;
}

/**
 * The array a cell stands for, created on first use: for an untyped parameter, in the variable at the
 * end of its reference chain (the caller's), shared along the chain. A scalar is an error.
 */
export function arrayOfCell(cell: Cell, name: string, at: Pos): AwkArray {
  if (cell.array !== null) return cell.array;
  if (cell.value !== UNINIT) throw new AwkRuntimeError(`attempt to use scalar ${name} as an array`, at);
  let target = cell;
  while (target.array === null && target.value === UNINIT && target.ref !== null) target = target.ref;
  if (target.array === null) {
    // The chain ends in a variable never used (or, broken by a scalar, at the parameter itself).
    if (target.value !== UNINIT) target = cell;
    target.array = new Map();
  }
  for (let c = cell; c !== target; c = c.ref!) {
    c.array = target.array;
    c.borrowed = true;
  }
  return cell.array!;
}

/** The array a cell holds, if it holds one (without creating it): for length(name). */
export function peekArray(start: Cell): AwkArray | null {
  let cell: Cell | null = start;
  while (cell !== null && cell.array === null && cell.value === UNINIT) cell = cell.ref;
  return cell?.array ?? null;
}

/** Element operations that keep the count of live elements (all arrays together) within MAX_ARRAY_ELEMENTS. */
export class Elements {
  private live = 0;

  constructor(private readonly budget: WorkBudget) {}

  /** Counts elements that exist before the program runs (ENVIRON, ARGV). */
  adopt(array: AwkArray): void {
    this.live += array.size;
  }

  /** An element's value; referencing an element creates it, as in every awk. */
  get(array: AwkArray, key: string): Value {
    const v = array.get(key);
    if (v !== undefined) return v;
    this.set(array, key, UNINIT);
    return UNINIT;
  }

  set(array: AwkArray, key: string, value: Value): void {
    const size = array.size;
    array.set(key, value);
    if (array.size > size) {
      this.budget.charge(INSERT_COST);
      this.live += 1;
      if (this.live > MAX_ARRAY_ELEMENTS) {
        this.budget.refuse("maxAwkArrayElements", `too many array elements (more than ${MAX_ARRAY_ELEMENTS} in all arrays)`, { max: MAX_ARRAY_ELEMENTS });
      }
    }
  }

  delete(array: AwkArray, key: string): void {
    if (array.delete(key)) this.live -= 1;
  }

  clear(array: AwkArray): void {
    this.live -= array.size;
    array.clear();
  }

  /** Forgets the local arrays of a finished call (those not borrowed from a caller). */
  release(frame: Cell[]): void {
    for (const cell of frame) if (cell.array !== null && !cell.borrowed) this.live -= cell.array.size;
  }
}
