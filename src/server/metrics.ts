/**
 * Prometheus metrics of the service, in the text exposition format (version 0.0.4). Session counters
 * come from the SessionManager (so steps driven over HTTP, WebSocket and MCP all count); errors and HTTP
 * requests are counted by the transports as they answer.
 */
import type { Fleet } from "./fleet.js";
import type { SessionManager } from "./sessions.js";

/** Upper bounds (seconds) of the step latency histogram's buckets. */
export const STEP_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5] as const;

/** The content type of the exposition. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

/** Counters and the step histogram of one server. */
export class ServiceMetrics {
  private readonly buckets = new Array<number>(STEP_BUCKETS.length).fill(0);
  private stepCount = 0;
  private stepSum = 0;
  private readonly errors = new Map<string, number>();
  private readonly requests = new Map<string, { route: string; status: number; count: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly manager: SessionManager,
    private readonly fleet?: Fleet,
  ) {
    // The manager buffers latencies until drained; draining often keeps that buffer small between scrapes.
    this.timer = setInterval(() => this.absorbLatencies(), 2000);
    this.timer.unref();
  }

  /** Count an error answered to a client (any transport). */
  countError(code: string): void {
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
  }

  /** Count an HTTP request by route pattern (not URL, so ids do not explode the label set) and status. */
  countRequest(route: string, status: number): void {
    const key = `${status} ${route}`;
    const hit = this.requests.get(key);
    if (hit) hit.count++;
    else this.requests.set(key, { route, status, count: 1 });
  }

  /** The exposition text (a fleet's figures are asked of its Redis; if it does not answer they are left out). */
  async render(): Promise<string> {
    const fleet = this.fleet ? await this.fleet.stats().catch(() => null) : null;
    const stats = this.manager.drainStats();
    const lines: string[] = [];
    const metric = (name: string, type: string, help: string, samples: string[]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
    };
    metric("llmix_sessions_live", "gauge", "Live sessions.", [`llmix_sessions_live ${stats.live}`]);
    metric("llmix_sessions_created_total", "counter", "Sessions created since the server started.", [`llmix_sessions_created_total ${stats.created_total}`]);
    metric("llmix_steps_total", "counter", "Steps applied since the server started.", [`llmix_steps_total ${stats.steps_total}`]);
    metric("llmix_sessions_reaped_total", "counter", "Sessions closed after being idle longer than the TTL.", [`llmix_sessions_reaped_total ${stats.reaped_total}`]);
    const hosts = stats.hosts;
    metric("llmix_hosts", "gauge", "Environment host threads that run sessions.", [`llmix_hosts ${hosts.hosts}`]);
    metric("llmix_hosts_started_total", "counter", "Host threads started (a stopped host is replaced by a new one).", [`llmix_hosts_started_total ${hosts.hosts_started}`]);
    metric(
      "llmix_hosts_stopped_total",
      "counter",
      "Host threads stopped by a request: over the step deadline, over the memory cap, or ended by the environment.",
      Object.entries(hosts.hosts_stopped).map(([reason, n]) => `llmix_hosts_stopped_total{reason="${reason}"} ${n}`),
    );
    metric("llmix_sessions_rebuilt_total", "counter", "Sessions rebuilt on a new host after their host was stopped.", [`llmix_sessions_rebuilt_total ${hosts.sessions_rebuilt}`]);
    metric("llmix_sessions_lost_total", "counter", "Sessions ended by a host stop: the one to blame, and any that could not be rebuilt.", [`llmix_sessions_lost_total ${hosts.sessions_lost}`]);
    const last = hosts.last_rebuild;
    if (last) {
      metric("llmix_last_rebuild_seconds", "gauge", "How long the last rebuild of a stopped host's sessions took.", [`llmix_last_rebuild_seconds ${last.ms / 1000}`]);
      metric("llmix_last_rebuild_sessions_rebuilt", "gauge", "Sessions the last rebuild brought back.", [`llmix_last_rebuild_sessions_rebuilt ${last.rebuilt}`]);
      metric("llmix_last_rebuild_sessions_lost", "gauge", "Sessions the last rebuild could not bring back.", [`llmix_last_rebuild_sessions_lost ${last.lost}`]);
    }
    if (this.fleet) {
      metric("llmix_fleet_adopted_total", "counter", "Fleet sessions this replica rebuilt from the fleet's checkpoint (it held no current copy).", [`llmix_fleet_adopted_total ${stats.fleet_adopted_total}`]);
      metric("llmix_fleet_replayed_total", "counter", "Actions this replica replayed to catch up its copies of fleet sessions stepped elsewhere.", [`llmix_fleet_replayed_total ${stats.fleet_replayed_total}`]);
    }
    if (fleet) {
      metric("llmix_fleet_sessions", "gauge", "Live sessions in the whole fleet.", [`llmix_fleet_sessions ${fleet.sessions}`]);
      metric("llmix_fleet_replicas", "gauge", "Replicas of the fleet whose heartbeat is current.", [`llmix_fleet_replicas ${fleet.replicas}`]);
    }
    this.observe(stats.latencies);
    let cumulative = 0;
    const buckets = STEP_BUCKETS.map((le, i) => {
      cumulative += this.buckets[i] as number;
      return `llmix_step_seconds_bucket{le="${le}"} ${cumulative}`;
    });
    metric("llmix_step_seconds", "histogram", "Time an environment took to apply one step.", [
      ...buckets,
      `llmix_step_seconds_bucket{le="+Inf"} ${this.stepCount}`,
      `llmix_step_seconds_sum ${this.stepSum}`,
      `llmix_step_seconds_count ${this.stepCount}`,
    ]);
    metric(
      "llmix_errors_total",
      "counter",
      "Errors answered to clients, by stable error code.",
      [...this.errors.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([code, n]) => `llmix_errors_total{code="${escapeLabel(code)}"} ${n}`),
    );
    metric(
      "llmix_http_requests_total",
      "counter",
      "HTTP requests answered, by route pattern and status.",
      [...this.requests.values()]
        .sort((a, b) => a.route.localeCompare(b.route) || a.status - b.status)
        .map((r) => `llmix_http_requests_total{route="${escapeLabel(r.route)}",status="${r.status}"} ${r.count}`),
    );
    return `${lines.join("\n")}\n`;
  }

  /** Stop the background drain. */
  close(): void {
    clearInterval(this.timer);
  }

  private absorbLatencies(): void {
    // drainStats also returns counters; only the latencies are consumed here, the rest is read at render time.
    this.observe(this.manager.drainStats().latencies);
  }

  private observe(latencies: readonly number[]): void {
    for (const seconds of latencies) {
      this.stepCount++;
      this.stepSum += seconds;
      const i = STEP_BUCKETS.findIndex((le) => seconds <= le);
      if (i >= 0) this.buckets[i] = (this.buckets[i] as number) + 1;
    }
  }
}
