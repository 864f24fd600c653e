/**
 * Restored billing-dispute worlds are validated (issue 12, item 4): every snapshot an episode produces
 * restores byte for byte, and every edited one is refused with invalid_snapshot naming what is wrong,
 * leaving the episode as it was.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { expectRoundTrips, rejection } from "../../../test/helpers.js";
import type { Action, StepResult } from "../../core/contract.js";
import type { EnvironmentSnapshot } from "../../core/environment.js";
import { ValidationError } from "../../core/errors.js";
import { canonicalJson } from "../../core/json.js";
import { toDecision } from "../../core/policy.js";
import { runPolicy } from "../../core/run-policy.js";
import { BillingDispute } from "./env.js";
import { SCENARIOS } from "./test-support.js";
import { FAMILIES, variantsFor } from "./tasks.js";
import type { Session } from "./world.js";

type Snapshot = EnvironmentSnapshot & { world: { db: { format: string; bytes: string; random: unknown }; session: Session } };

/** A copy of a snapshot whose database went through `sql` on a plain connection that may write the schema table. */
function withDatabase(snapshot: Snapshot, sql: string): Snapshot {
  const copy = structuredClone(snapshot);
  const db = new Database(Buffer.from(copy.world.db.bytes, "base64"));
  db.unsafeMode(true);
  db.exec(sql);
  copy.world.db.bytes = db.serialize().toString("base64");
  db.close();
  return copy;
}

/** A copy of a snapshot whose database was vacuumed into pages of `pageSize` bytes (possible for a file only). */
function withPageSize(snapshot: Snapshot, pageSize: number): Snapshot {
  const dir = mkdtempSync(join(tmpdir(), "llmix-page-size-"));
  try {
    const file = join(dir, "db.sqlite");
    writeFileSync(file, Buffer.from(snapshot.world.db.bytes, "base64"));
    const db = new Database(file);
    db.exec(`PRAGMA page_size = ${pageSize}; VACUUM;`);
    db.close();
    const copy = structuredClone(snapshot);
    copy.world.db.bytes = readFileSync(file).toString("base64");
    return copy;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A refund episode mid-conversation: verified, refunded, noted; the customer not yet told. */
async function refundEpisode(): Promise<{ env: BillingDispute; snapshot: Snapshot }> {
  const env = new BillingDispute({ scenario: { ...SCENARIOS["duplicate-charge"], variant: "none" } });
  const initial = await env.reset("billing-dispute/medium/seed-11", 3);
  const solver = env.referenceSolver();
  let observation = initial;
  const history: Array<{ action: Action; result: StepResult }> = [];
  for (let step = 1; step <= 7; step++) {
    const action = toDecision(await solver.act({ step, observation, tools: env.tools(), history })).action as Action;
    const result = await env.step(action);
    history.push({ action, result });
    observation = result.observation;
  }
  const snapshot = JSON.parse(JSON.stringify(await env.snapshot())) as Snapshot;
  expect(snapshot.world.session.actions.map((a) => a.kind)).toEqual(["refund"]);
  return { env, snapshot };
}

describe("snapshot -> restore -> snapshot", () => {
  it("is byte-identical after every step of many episodes (reference solver mixed with random actions)", async () => {
    const ids = (["easy", "medium", "hard"] as const).flatMap((d) => Array.from({ length: 7 }, () => d)).map((d, i) => `billing-dispute/${d}/seed-${100 + i}`);
    const restores = await expectRoundTrips(() => new BillingDispute(), ids, { messageRate: 0.3, randomShares: [0, 0.2, 0.5, 1] });
    expect(restores).toBeGreaterThan(200);
  });

  it.each(FAMILIES.flatMap((family) => variantsFor(family).map((variant) => [family, variant] as const)))(
    "holds for the reference solver's whole %s / %s episode (every kind of account change)",
    async (family, variant) => {
      const env = new BillingDispute({ scenario: { family, variant } });
      const peer = new BillingDispute({ scenario: { family, variant } });
      const initial = await env.reset("billing-dispute/hard/seed-31", 5);
      await runPolicy(env, env.referenceSolver(), { maxSteps: env.maxSteps, initial });
      const snapshot = JSON.parse(JSON.stringify(await env.snapshot())) as EnvironmentSnapshot;
      await peer.restore(snapshot);
      expect(canonicalJson(await peer.snapshot())).toBe(canonicalJson(snapshot));
    },
  );
});

describe("edited snapshots are refused with invalid_snapshot naming what is wrong", () => {
  const charge = (s: Snapshot) => s.world.session.actions[0]!;
  const edits: Array<[string, (s: Snapshot) => Snapshot | void, RegExp]> = [
    // The shape (worldSchema).
    ["a mistyped field", (s) => void ((s.world.session.customer as unknown as Record<string, unknown>).turns = "2"), /snapshot\.world\.session\.customer\.turns: .*expected number/],
    ["a missing field", (s) => void delete (s.world.session as Partial<Session>).gateway, /snapshot\.world\.session\.gateway: .*expected object/],
    ["an extra field", (s) => void ((s.world.session as unknown as Record<string, unknown>).mood = "happy"), /snapshot\.world\.session: Unrecognized key: "mood"/],
    ["a message over its bound", (s) => void (s.world.session.transcript[1]!.text = "x".repeat(200_001)), /snapshot\.world\.session\.transcript\[1\]\.text/],
    ["an unknown violation rule", (s) => void s.world.session.violations.push({ step: 1, rule: "rudeness", detail: "", penalty: -1 }), /snapshot\.world\.session\.violations\[0\]\.rule/],
    ["a database snapshot with an extra key", (s) => void ((s.world.db as Record<string, unknown>).extra = 1), /snapshot\.world\.db: Unrecognized key/],
    ["database bytes that are not base64", (s) => void (s.world.db.bytes = "not base64!"), /database snapshot bytes must be a base64 string/],
    // The conversation and the customer.
    ["an opening said by the agent", (s) => void (s.world.session.transcript[0]!.from = "agent"), /transcript\[0\] must be the customer's opening/],
    ["an agent message without the customer's reply", (s) => void s.world.session.transcript.pop(), /transcript\[\d+\]: each step after the opening holds one agent message/],
    ["a turn count the transcript does not hold", (s) => void (s.world.session.customer.turns = 5), /customer\.turns is 5, but the transcript holds 1 agent messages/],
    ["a fact the customer never says", (s) => void (s.world.session.customer.revealed.email = "someone@else.example"), /customer\.revealed\.email is not what this customer says/],
    ["more pushes than the persona has", (s) => void (s.world.session.customer.pushesLeft = 9), /pushesLeft is 9/],
    ["more gateway failures than the task injects", (s) => void (s.world.session.gateway.failuresLeft = 3), /gateway\.failuresLeft is 3/],
    // Ids and records the session names.
    ["a verified customer who does not exist", (s) => void (s.world.session.verified = "cus_nobody"), /session\.verified names no customer of the task \(cus_nobody\)/],
    ["attempts on a customer who does not exist", (s) => void (s.world.session.verificationAttempts.cus_nobody = 1), /verificationAttempts names no customer of the task/],
    ["a penalty that is not its rule's", (s) => void (s.world.session.violations.push({ step: 2, rule: "false_claim", detail: "x", penalty: -0.1 })), /violations\[0\]\.penalty must be -0.5 for false_claim/],
    ["a refund above the agent's cap", (s) => void (charge(s).amount_cents = 9_000_000), /actions\[0\]\.amount_cents must be within the agent's cap/],
    ["a refund of another customer's charge", (s) => void (charge(s).charge_id = "ch_nobody"), /actions\[0\]\.charge_id ch_nobody is not a charge of/],
    ["a refund with a credit's reference", (s) => void (charge(s).ref = "CR-200001"), /actions\[0\]\.ref CR-200001 is not a refund reference/],
    ["an action the ledger does not hold", (s) => void s.world.session.actions.push({ ...charge(s), ref: "RF-299999" }), /session action RF-299999 is not in the ledger/],
    ["an action that disagrees with its ledger row", (s) => void (charge(s).amount_cents! -= 1), /refund RF-\d+ in the ledger does not match the session's actions/],
    // The database.
    ["an added view", (s) => withDatabase(s, "CREATE VIEW charges_all AS SELECT * FROM charges"), /database schema differs from the expected one: unexpected view charges_all/],
    ["an added trigger", (s) => withDatabase(s, "CREATE TRIGGER audit AFTER INSERT ON refunds BEGIN DELETE FROM refunds; END"), /unexpected trigger audit/],
    [
      "a retyped column",
      (s) =>
        withDatabase(
          s,
          `PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'amount_cents INTEGER NOT NULL CHECK', 'amount_cents TEXT NOT NULL CHECK') WHERE name = 'charges';`,
        ),
      /table charges: column amount_cents has type TEXT, expected type INTEGER/,
    ],
    ["a dropped table", (s) => withDatabase(s, "DROP TABLE payments"), /missing index payments_charge; missing index sqlite_autoindex_payments_1; missing table payments/],
    ["a renamed table", (s) => withDatabase(s, "ALTER TABLE account_notes RENAME TO notes"), /index notes_customer is on table notes, expected account_notes.*missing table account_notes.*unexpected table notes/],
    ["a row with a wrong type", (s) => withDatabase(s, "UPDATE charges SET amount_cents = 'lots' WHERE rowid = 1"), /table charges: column amount_cents holds a text value in row 1, but its type INTEGER admits integer/],
    ["a NOT NULL constraint dropped", (s) => withDatabase(s, "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'body TEXT NOT NULL', 'body TEXT') WHERE name = 'account_notes';"), /table account_notes: column body has nullable, expected NOT NULL/],
    ["a tampered ledger reference", (s) => withDatabase(s, "UPDATE refunds SET ref = 'RF-299999' WHERE ref GLOB 'RF-2?????'"), /refund ledger row \d+ has the reference RF-299999, expected RF-2\d{5}/],
    ["another page size", (s) => withPageSize(s, 1024), /page size 1024, expected 512/],
    ["a database over its size cap", (s) => withDatabase(s, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 2200) INSERT INTO account_notes (customer_id, author, body, created_at) SELECT 'c', 'a', printf('%.2000c', 'x'), 't' FROM r"), /snapshot\.world\.db\.bytes: Too big/],
  ];

  it.each(edits)("%s", async (_name, edit, message) => {
    const { env, snapshot } = await refundEpisode();
    const bad = structuredClone(snapshot);
    const error = await rejection(env.restore((edit(bad) ?? bad) as EnvironmentSnapshot));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(message);
    expect(canonicalJson(await env.snapshot())).toBe(canonicalJson(snapshot));
  });

  it("a row breaking NOT NULL behind the expected schema fails the integrity check", async () => {
    const { env, snapshot } = await refundEpisode();
    const relax = "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'body TEXT NOT NULL', 'body TEXT') WHERE name = 'account_notes';";
    const restrict = "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = replace(sql, 'body TEXT,', 'body TEXT NOT NULL,') WHERE name = 'account_notes';";
    const bad = withDatabase(withDatabase(withDatabase(snapshot, relax), "UPDATE account_notes SET body = NULL WHERE rowid = 1"), restrict);
    const error = await rejection(env.restore(bad));
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(/database fails its integrity check: NULL value in account_notes\.body/);
  });

  it("the finding: a never-ending recursive view in place of a table the tools read is refused at restore, never reached by a step", async () => {
    const { env, snapshot } = await refundEpisode();
    const view = withDatabase(
      snapshot,
      `PRAGMA legacy_alter_table = ON; ALTER TABLE charges RENAME TO charges_data;
       CREATE VIEW charges AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT c.* FROM charges_data c, r`,
    );
    // Without the schema check this database opens fine: its view would run on the next list_charges.
    new Database(Buffer.from(view.world.db.bytes, "base64")).close();
    const started = performance.now();
    const error = await rejection(env.restore(view));
    expect(error.code).toBe("invalid_snapshot");
    expect(error.message).toMatch(/charges is a view, expected a table/);
    expect(performance.now() - started).toBeLessThan(5_000);
    // The episode goes on from where it was, and its reads return.
    const task = (env as unknown as { episode: { task: { customerId: string } } }).episode.task;
    const read = await env.step({ type: "tool_call", tool: "list_charges", args: { customer_id: task.customerId, invoice_id: null } });
    expect(read.info.tool_result).toMatchObject({ status: "ok" });
  });
});
