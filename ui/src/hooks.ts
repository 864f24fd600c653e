/** Small hooks the views share: loading data, and the episodes marked for comparison. */
import { useEffect, useState } from "preact/hooks";
import { onAuthChange } from "./api";

/** A value being loaded: `data` once it arrived, `error` if it failed. */
export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
}

/** Load with `load` whenever `deps` change, and again after a sign-in. A stale answer is dropped. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: undefined, error: undefined, loading: true });
  const [generation, setGeneration] = useState(0);
  useEffect(() => onAuthChange(() => setGeneration((g) => g + 1)), []);
  useEffect(() => {
    let current = true;
    setState((s) => ({ data: s.data, error: undefined, loading: true }));
    load().then(
      (data) => current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => current && setState({ data: undefined, error: error instanceof Error ? error : new Error(String(error)), loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, generation]);
  return state;
}

const MARKS_KEY = "llmix.inspector.compare";
const markListeners = new Set<() => void>();

/** Episode ids marked for comparison (at most two, oldest first), kept for the tab. */
export function compareMarks(): string[] {
  try {
    const value = JSON.parse(sessionStorage.getItem(MARKS_KEY) ?? "[]") as unknown;
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string").slice(-2) : [];
  } catch {
    return [];
  }
}

function saveMarks(marks: string[]): void {
  sessionStorage.setItem(MARKS_KEY, JSON.stringify(marks));
  markListeners.forEach((l) => l());
}

/** Mark or unmark an episode; a third mark drops the oldest. Returns the marks after. */
export function toggleCompareMark(episodeId: string): string[] {
  const marks = compareMarks();
  const next = marks.includes(episodeId) ? marks.filter((m) => m !== episodeId) : [...marks, episodeId].slice(-2);
  saveMarks(next);
  return next;
}

/** Forget every mark. */
export function clearCompareMarks(): void {
  saveMarks([]);
}

/** The marks, re-rendering when they change. */
export function useCompareMarks(): string[] {
  const [marks, setMarks] = useState(compareMarks);
  useEffect(() => {
    const update = () => setMarks(compareMarks());
    markListeners.add(update);
    return () => void markListeners.delete(update);
  }, []);
  return marks;
}
