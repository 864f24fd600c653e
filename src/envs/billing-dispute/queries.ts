/**
 * Every SQL statement the billing-dispute tools (and the customer's turn, and restore's checks) run, in one
 * place: the code uses them by name, and the world compiles the first ones of an investigation when an
 * episode's database opens (see `createDatabase`).
 */
export const QUERIES = {
  customerById: "SELECT id, name FROM customers WHERE id = ?",
  chargeWithReturned: `SELECT c.id, c.customer_id, c.amount_cents, c.status,
    (SELECT COALESCE(SUM(amount_cents), 0) FROM refunds r WHERE r.charge_id = c.id) +
    (SELECT COALESCE(SUM(amount_cents), 0) FROM credits k WHERE k.charge_id = c.id) AS returned_cents
    FROM charges c WHERE c.id = ?`,
  ticket: "SELECT status, charge_id, resolution FROM disputes WHERE id = ? AND customer_id = ?",
  resolveDispute: "UPDATE disputes SET status = ?, charge_id = ?, resolution = ? WHERE id = ?",
  agentProfile: "SELECT id, name, tier, cap_cents FROM agents",
  lookupCustomer: `SELECT id, name, email, phone, card_brand, created_at FROM customers
    WHERE lower(email) = lower(?) OR id = ? OR phone = ? OR lower(name) LIKE '%' || lower(?) || '%' ORDER BY name, id LIMIT 5`,
  customerFactors: "SELECT email, card_last4, postal_code FROM customers WHERE id = ?",
  logVerification: "INSERT INTO verification_log (customer_id, success, created_at) VALUES (?, ?, ?)",
  subscriptions: `SELECT s.id, s.status, p.name AS plan, p.interval, p.price_cents, s.started_at, s.plan_changed_at, s.cancelled_at, s.renews_at
    FROM subscriptions s JOIN plans p ON p.id = s.plan_id WHERE s.customer_id = ? ORDER BY s.started_at`,
  invoices: "SELECT id, period_start, period_end, total_cents, status, issued_at FROM invoices WHERE customer_id = ? ORDER BY issued_at",
  charges: `SELECT id, invoice_id, amount_cents, description, status, card_last4, created_at FROM charges
    WHERE customer_id = ? AND (? IS NULL OR invoice_id = ?) ORDER BY created_at, id`,
  refunds: "SELECT ref, charge_id, amount_cents, reason, created_at, created_by FROM refunds WHERE customer_id = ? AND (? IS NULL OR charge_id = ?) ORDER BY id",
  credits: "SELECT ref, charge_id, amount_cents, reason, created_at, created_by FROM credits WHERE customer_id = ? AND (? IS NULL OR charge_id = ?) ORDER BY id",
  accountNotes: "SELECT author, body, created_at FROM account_notes WHERE customer_id = ? ORDER BY created_at, id",
  insertRefund: "INSERT INTO refunds (ref, charge_id, customer_id, amount_cents, reason, created_at, created_by) VALUES ('pending', ?, ?, ?, ?, ?, ?)",
  setRefundRef: "UPDATE refunds SET ref = ? WHERE id = ?",
  insertCredit: "INSERT INTO credits (ref, customer_id, charge_id, amount_cents, reason, created_at, created_by) VALUES ('pending', ?, ?, ?, ?, ?, ?)",
  setCreditRef: "UPDATE credits SET ref = ? WHERE id = ?",
  insertEscalation: "INSERT INTO escalations (ref, customer_id, charge_id, amount_cents, summary, created_at, created_by) VALUES ('pending', ?, ?, ?, ?, ?, ?)",
  setEscalationRef: "UPDATE escalations SET ref = ? WHERE id = ?",
  anyFailedVerification: "SELECT 1 AS ok FROM verification_log WHERE success = 0 LIMIT 1",
  insertNote: "INSERT INTO account_notes (customer_id, author, body, created_at) VALUES (?, ?, ?, ?)",
  /** The ledger rows an agent created: every escalation, and refunds and credits without a seeded (5-digit) reference. */
  agentLedger: `SELECT 'refund' AS kind, id, ref, customer_id, charge_id, amount_cents FROM refunds WHERE ref NOT GLOB 'RF-[0-9][0-9][0-9][0-9][0-9]'
    UNION ALL SELECT 'credit', id, ref, customer_id, charge_id, amount_cents FROM credits WHERE ref NOT GLOB 'CR-[0-9][0-9][0-9][0-9][0-9]'
    UNION ALL SELECT 'escalation', id, ref, customer_id, charge_id, amount_cents FROM escalations`,
} as const;
