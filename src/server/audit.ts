/**
 * The audit log's writer (DESIGN §9): who created, read, exported, replayed or deleted which data, with
 * the token's name and id and the time. Events go to the trajectory store's append-only audit table,
 * and are written before the data they are about is answered: a read the log does not hold never
 * happened. Without a store nothing is recorded (and nothing is stored to read either).
 */
import type { JsonValue } from "../core/json.js";
import type { AuditAction, AuditEvent, TrajectoryStore } from "../store/types.js";
import type { Caller } from "./sessions.js";

/** Who acts, as the audit log names them. */
export interface Actor {
  token: string;
  token_id: string | null;
  tenant: string | null;
}

/** The actor a request's caller is ("anonymous" on a service without auth). */
export function actorOf(caller: Caller): Actor {
  if (caller === null) return { token: "anonymous", token_id: null, tenant: null };
  return { token: caller.name, token_id: caller.id ?? null, tenant: caller.tenant ?? null };
}

/** Appends audit events to a store. */
export class AuditLog {
  constructor(
    private readonly store: TrajectoryStore | undefined,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Record one event (awaited: the caller answers only once it is stored). */
  async record(actor: Actor, action: AuditAction, target: { kind: string; id: string }, via: string, detail: JsonValue = null): Promise<void> {
    if (!this.store) return;
    await this.store.appendAudit([this.event(actor, action, target, via, detail)]);
  }

  /** One event, stamped now (for a store call that appends it in its own transaction, as purge does). */
  event(actor: Actor, action: AuditAction, target: { kind: string; id: string }, via: string, detail: JsonValue = null): AuditEvent {
    return { at: this.now().toISOString(), ...actor, action, target_kind: target.kind, target_id: target.id, via, detail };
  }
}
