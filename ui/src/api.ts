/**
 * Calls to the service. Every call sends the bearer token when there is one; a 401 marks the session as
 * needing one, which shows the sign-in form. The token arrives in the URL fragment (`#token=...`, never
 * sent to any server or kept in history once read) or through that form, and lives in sessionStorage:
 * one tab, gone when it closes.
 */
import type { EpisodePage, EpisodeResponse, ReplayReport, RunListResponse, RunResponse, TaskFeaturesResponse } from "./wire";

const TOKEN_KEY = "llmix.inspector.token";

/** An answer other than 2xx, with the service's error code when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Listener = () => void;
const listeners = new Set<Listener>();
let needsToken = false;

/** Subscribe to sign-in changes (token set, or a 401 asking for one); returns the unsubscribe. */
export function onAuthChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
const notify = () => listeners.forEach((l) => l());

/** True after a call was refused for want of a (valid) token. */
export function signInRequired(): boolean {
  return needsToken;
}

/** Keep a token for this tab and retry what was refused. */
export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token.trim());
  needsToken = false;
  notify();
}

/** Forget the token. */
export function signOut(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  notify();
}

/** Whether a token is kept. */
export function hasToken(): boolean {
  return sessionStorage.getItem(TOKEN_KEY) !== null;
}

/**
 * Read `token=...` from the fragment (`#token=T` or `#/runs?token=T`), keep it and rewrite the address
 * without it, so it is neither in the history nor in a link someone copies.
 */
export function takeTokenFromUrl(): void {
  const hash = window.location.hash;
  const match = /(?:^#|[?&])token=([^&]*)/.exec(hash);
  if (!match) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1] ?? ""));
  let rest = hash.replace(/(^#|[?&])token=[^&]*&?/, "$1").replace(/[?&]$/, "");
  if (rest === "#" || rest === "") rest = "#/runs";
  history.replaceState(null, "", `${window.location.pathname}${window.location.search}${rest}`);
}

/** The service root: the page lives at <root>/ui/, so behind a path prefix the API is still found. */
const apiRoot = () => new URL("../", document.baseURI);

async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers = new Headers(init.headers);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.set("authorization", `Bearer ${token}`);
  headers.set("accept", "application/json");
  const response = await fetch(new URL(path, apiRoot()), { ...init, headers });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    body = null;
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
    if (response.status === 401) {
      needsToken = true;
      notify();
    }
    throw new ApiError(response.status, error?.code ?? "http_error", error?.message ?? `${response.status} ${response.statusText}`);
  }
  return body as T;
}

const enc = encodeURIComponent;

/** The run list, newest first. */
export const listRuns = (limit: number) => call<RunListResponse>(`v1/runs?limit=${limit}`);
/** One run and its metrics per difficulty. */
export const getRun = (runId: string) => call<RunResponse>(`v1/runs/${enc(runId)}`);
/** A page of a run's episodes. */
export const getEpisodePage = (runId: string, offset: number, limit: number) => call<EpisodePage>(`v1/runs/${enc(runId)}/episodes?limit=${limit}&offset=${offset}`);
/** Task families and features of a run's tasks (a service may not offer them). */
export const getRunTasks = (runId: string) => call<TaskFeaturesResponse>(`v1/runs/${enc(runId)}/tasks`);
/** One episode with every step. Episode ids hold "/": always sent encoded. */
export const getEpisode = (episodeId: string) => call<EpisodeResponse>(`v1/episodes/${enc(episodeId)}`);
/** Re-run an episode's actions on a fresh environment and compare. */
export const replayEpisode = (episodeId: string) => call<ReplayReport>(`v1/episodes/${enc(episodeId)}/replay`, { method: "POST" });

/** Largest run the inspector loads whole (its charts and filters need every episode). */
export const MAX_RUN_EPISODES = 20_000;
const PAGE = 500;

/** Every episode of a run (up to MAX_RUN_EPISODES), page by page; `total` is the run's count. */
export async function getAllEpisodes(runId: string): Promise<EpisodePage> {
  const first = await getEpisodePage(runId, 0, PAGE);
  const episodes = [...first.episodes];
  const want = Math.min(first.total, MAX_RUN_EPISODES);
  while (episodes.length < want) {
    const page = await getEpisodePage(runId, episodes.length, Math.min(PAGE, want - episodes.length));
    if (page.episodes.length === 0) break;
    episodes.push(...page.episodes);
  }
  return { episodes, total: first.total };
}
