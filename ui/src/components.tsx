/** Pieces every view uses: outcome badges, JSON blocks, errors, and the verdict tree. */
import type { ComponentChildren } from "preact";
import { ApiError } from "./api";
import { num, prettyJson } from "./format";
import { asVerdict, type Json } from "./wire";

/** "passed" / "failed" / "error" as a coloured word (the colour is never the only signal). */
export function Outcome({ passed, error }: { passed: boolean | undefined; error?: boolean }) {
  if (error) return <span class="badge badge-error">error</span>;
  if (passed === undefined) return <span class="badge">no verdict</span>;
  return passed ? <span class="badge badge-pass">passed</span> : <span class="badge badge-fail">failed</span>;
}

/** Lines past which a JSON block starts folded (a world's whole state would push everything else away). */
const FOLD_LINES = 8;

/** A JSON value, indented, in a scrollable block; a long one folded behind its first line when `fold` is set. */
/** A state difference as the verifier gave it: a list of named differences, or its JSON. */
export function DifferenceList({ differences }: { differences: unknown }) {
  if (!Array.isArray(differences)) return <JsonBlock value={differences} />;
  return (
    <ul>
      {differences.map((x, i) => (
        <li key={i}>{typeof x === "string" ? x : prettyJson(x)}</li>
      ))}
    </ul>
  );
}

export function JsonBlock({ value, label, fold = false }: { value: unknown; label?: string; fold?: boolean }) {
  const text = typeof value === "string" ? value : prettyJson(value);
  const block = (
    <pre class="json" aria-label={label}>
      {text}
    </pre>
  );
  const lines = text.split("\n").length;
  if (!fold || lines <= FOLD_LINES) return block;
  return (
    <details class="fold">
      <summary>
        {text.split("\n", 1)[0]} … <span class="muted">({lines} lines)</span>
      </summary>
      {block}
    </details>
  );
}

/** A failed load, said plainly (a sign-in form replaces the view for a 401). */
export function LoadError({ error }: { error: Error }) {
  const status = error instanceof ApiError ? ` (${error.status} ${error.code})` : "";
  return (
    <p class="error" role="alert">
      Could not load: {error.message}
      {status}
    </p>
  );
}

/** "Loading…" for screen readers and eyes. */
export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** A titled section. */
export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="panel" aria-labelledby={id ? `${id}-title` : undefined}>
      <h2 id={id ? `${id}-title` : undefined}>{title}</h2>
      {children}
    </section>
  );
}

const isRecord = (v: unknown): v is Record<string, Json> => v !== null && typeof v === "object" && !Array.isArray(v);
const isEmpty = (v: unknown) => v === null || v === undefined || (Array.isArray(v) && v.length === 0) || (isRecord(v) && Object.keys(v).length === 0);

/** A verdict's details: keys and values, lists of strings as lists, anything deeper as JSON. */
function VerdictDetails({ details }: { details: Json }) {
  if (!isRecord(details)) return <JsonBlock value={details} fold />;
  return (
    <dl class="details">
      {Object.entries(details).map(([key, value]) => (
        <div class={key === "differences" && !isEmpty(value) ? "detail differences" : "detail"} key={key}>
          <dt>{key}</dt>
          <dd>
            {Array.isArray(value) && value.every((x) => typeof x === "string") && value.length > 0 ? (
              <ul>
                {value.map((x, i) => (
                  <li key={i}>{x as string}</li>
                ))}
              </ul>
            ) : value !== null && typeof value === "object" ? (
              <JsonBlock value={value} fold />
            ) : (
              String(value)
            )}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** One verdict and its parts, failed parts opened. */
export function VerdictTree({ name, verdict, depth = 0 }: { name: string; verdict: Json | null; depth?: number }) {
  const v = asVerdict(verdict);
  if (!v) return <JsonBlock value={verdict} />;
  const parts = isRecord(v.parts) ? Object.entries(v.parts) : [];
  return (
    <details class="verdict-node" open={depth === 0 || v.passed === false}>
      <summary>
        <span class="verdict-name">{name}</span> <Outcome passed={typeof v.passed === "boolean" ? v.passed : undefined} /> <span class="score">score {num(v.score ?? null)}</span>
      </summary>
      {v.details !== undefined && !isEmpty(v.details) && <VerdictDetails details={v.details} />}
      {parts.length > 0 && (
        <ul class="verdict-parts">
          {parts.map(([partName, part]) => (
            <li key={partName}>
              <VerdictTree name={partName} verdict={part} depth={depth + 1} />
            </li>
          ))}
        </ul>
      )}
    </details>
  );
}

/** Every non-empty `differences` in a verdict tree, with the path of parts it sits under. */
export function stateDifferences(verdict: Json | null, path: string[] = []): Array<{ path: string; differences: Json }> {
  const v = asVerdict(verdict);
  if (!v) return [];
  const found: Array<{ path: string; differences: Json }> = [];
  if (isRecord(v.details) && !isEmpty(v.details.differences)) found.push({ path: path.join(" › "), differences: v.details.differences as Json });
  if (isRecord(v.parts)) for (const [name, part] of Object.entries(v.parts)) found.push(...stateDifferences(part, [...path, name]));
  return found;
}
