"""The LLMix service client: ``Client``, ``Session``, ``StepResult`` and typed errors.

Standard library only (``http.client`` + ``json``). Every ``Client`` keeps one persistent HTTP/1.1
connection per thread (keep-alive: no TCP handshake per step), so one client may be shared by the
threads of a trainer; each thread gets its own connection. A request whose reused connection turns out
to have been closed by the server while idle (keep-alive timeout) is sent once more on a fresh
connection; any other transport failure raises ``ConnectionFailedError`` (code ``connection_failed``).

Errors of the service (``{"error": {"code", "message", "details"}}`` with a 4xx/5xx status) raise a
subclass of ``LlmixError`` chosen by the code's family; every one carries ``.code``, ``.message``,
``.details`` and ``.status``.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union
from urllib.parse import quote, urlencode, urlsplit

__all__ = [
    "Client",
    "Session",
    "StepResult",
    "LlmixError",
    "NotFoundError",
    "ValidationError",
    "AuthError",
    "SessionBusyError",
    "CapacityError",
    "StepTimeoutError",
    "LifecycleError",
    "ServerError",
    "ConnectionFailedError",
    "ClientTimeoutError",
    "error_from_response",
    "DEFAULT_URL",
    "TaskPool",
]

DEFAULT_URL = "http://127.0.0.1:8377"


# ----- errors -----------------------------------------------------------------------------------------


class LlmixError(Exception):
    """Base of every error the client raises: a stable ``code``, a message, ``details`` and the HTTP
    ``status`` (``None`` when no response arrived)."""

    def __init__(self, code: str, message: str, details: Optional[Mapping[str, Any]] = None, status: Optional[int] = None):
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.details: Dict[str, Any] = dict(details or {})
        self.status = status

    def __str__(self) -> str:
        where = f" (HTTP {self.status})" if self.status is not None else ""
        return f"[{self.code}] {self.message}{where}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, status={self.status!r})"


class NotFoundError(LlmixError):
    """Something named does not exist: ``unknown_env``, ``unknown_session``, ``unknown_episode``,
    ``unknown_run``, ``unknown_tool``, ``unknown_route``, ... (usually HTTP 404)."""


class ValidationError(LlmixError):
    """The request was malformed: ``invalid_argument``, ``invalid_task_id``, ``invalid_snapshot``,
    ``invalid_json``, ``payload_too_large``, ... (HTTP 400/413)."""


class AuthError(LlmixError):
    """``unauthorized`` (HTTP 401: no valid bearer token) or ``forbidden`` (HTTP 403: a missing scope)."""


class SessionBusyError(LlmixError):
    """``session_busy``: the session is processing another request (operations are never interleaved)."""


class CapacityError(LlmixError):
    """``capacity_reached`` (HTTP 503): the service holds as many sessions as it may. ``retry_after``
    is the wait in seconds the server suggested (``Retry-After``), or ``None``."""

    def __init__(self, code: str, message: str, details: Optional[Mapping[str, Any]] = None, status: Optional[int] = None,
                 retry_after: Optional[float] = None):
        super().__init__(code, message, details, status)
        self.retry_after = retry_after


class FleetUnavailableError(CapacityError):
    """``fleet_unavailable`` (HTTP 503): the Redis a fleet of replicas shares did not answer; retry later."""


class StepConflictError(LlmixError):
    """``step_conflict`` (HTTP 409): the step named the step count it expected (``expect_steps``) and the
    session has another; the action was not applied. ``details["steps"]`` is the session's count."""


class StepTimeoutError(LlmixError):
    """``step_timeout``: a step exceeded the service's per-step limit; the server closed the session."""


class LifecycleError(LlmixError):
    """``episode_ended`` / ``episode_not_started`` / ``environment_closed``: the call does not fit the
    episode's state (for instance a step after the episode ended)."""


class ServerError(LlmixError):
    """An unexpected failure of the service (``internal`` or another 5xx)."""


class ConnectionFailedError(LlmixError):
    """``connection_failed``: the service could not be reached or dropped the connection."""


class ClientTimeoutError(LlmixError):
    """``client_timeout``: no answer within the client's ``timeout``."""


_BY_CODE = {
    "session_busy": SessionBusyError,
    "capacity_reached": CapacityError,
    "fleet_unavailable": FleetUnavailableError,
    "step_conflict": StepConflictError,
    "step_timeout": StepTimeoutError,
    "unauthorized": AuthError,
    "forbidden": AuthError,
    "payload_too_large": ValidationError,
    "not_found": NotFoundError,
    "episode_ended": LifecycleError,
    "episode_not_started": LifecycleError,
    "environment_closed": LifecycleError,
    "internal": ServerError,
    "connection_failed": ConnectionFailedError,
    "client_timeout": ClientTimeoutError,
}


def _snapshot_steps(snapshot: Any) -> Optional[int]:
    """The step count a session continuing from ``snapshot`` has (None when the snapshot does not say)."""
    step = snapshot.get("step") if isinstance(snapshot, Mapping) else None
    return step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None


def _error_class(code: str, status: Optional[int]) -> type:
    if code in _BY_CODE:
        return _BY_CODE[code]
    if code.startswith("unknown_"):
        return NotFoundError
    if code.startswith("invalid_"):
        return ValidationError
    if status in (401, 403):
        return AuthError
    if status == 404:
        return NotFoundError
    if status == 503:
        return CapacityError
    if status is not None and status >= 500:
        return ServerError
    if status is not None and 400 <= status < 500:
        return ValidationError
    return LlmixError


def make_error(code: str, message: str, details: Optional[Mapping[str, Any]] = None, status: Optional[int] = None,
               retry_after: Optional[float] = None) -> LlmixError:
    """The typed error for a code (and HTTP status)."""
    cls = _error_class(code, status)
    if cls is CapacityError:
        if retry_after is None and details is not None:
            hint = details.get("retry_after_s")
            if isinstance(hint, (int, float)) and not isinstance(hint, bool):
                retry_after = float(hint)
        return CapacityError(code, message, details, status, retry_after=retry_after)
    return cls(code, message, details, status)


def error_from_response(status: int, body: bytes, headers: Optional[Mapping[str, str]] = None) -> LlmixError:
    """The typed error for an HTTP error response (``{"error": {code, message, details}}``). A body that
    is not of that shape (a proxy's page, say) gives code ``http_<status>``."""
    retry_after = _retry_after(headers)
    try:
        payload = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, ValueError):
        payload = None
    err = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(err, dict) and isinstance(err.get("code"), str):
        details = err.get("details")
        return make_error(err["code"], str(err.get("message", "")), details if isinstance(details, dict) else {}, status, retry_after)
    text = body[:500].decode("utf-8", "replace") if body else ""
    return make_error(f"http_{status}", text or f"HTTP {status} without an error body", {}, status, retry_after)


def _retry_after(headers: Optional[Mapping[str, str]]) -> Optional[float]:
    if not headers:
        return None
    value = None
    for key, v in headers.items():
        if key.lower() == "retry-after":
            value = v
            break
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: not used by LLMix


# ----- results ----------------------------------------------------------------------------------------


@dataclass
class StepResult:
    """One step's result (DESIGN §1, the service's wire form)."""

    observation: Dict[str, Any]
    reward: float
    reward_components: Dict[str, float]
    terminated: bool
    truncated: bool
    tool_result: Optional[Dict[str, Any]] = None
    info: Dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """The episode ended (terminated or truncated)."""
        return bool(self.terminated or self.truncated)

    @property
    def text(self) -> str:
        """The observation's rendered text (what a policy sees)."""
        return str(self.observation.get("rendered", ""))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "StepResult":
        return cls(
            observation=dict(data.get("observation") or {}),
            reward=float(data.get("reward", 0.0)),
            reward_components={k: float(v) for k, v in (data.get("reward_components") or {}).items()},
            terminated=bool(data.get("terminated", False)),
            truncated=bool(data.get("truncated", False)),
            tool_result=data.get("tool_result"),
            info=dict(data.get("info") or {}),
        )


# ----- the client ----------------------------------------------------------------------------------------

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class Client:
    """A client of one LLMix service.

    ``base_url`` defaults to ``$LLMIX_URL`` or ``http://127.0.0.1:8377``; ``token`` (a bearer token) to
    ``$LLMIX_TOKEN``. ``timeout`` bounds each request in seconds. ``capacity_retries`` (default 0: off)
    retries a request refused with ``capacity_reached`` that many times, sleeping the server's
    ``Retry-After`` (at most ``max_retry_wait`` seconds) in between. ``step_retries`` (default 0: off)
    retries a step whose connection failed or whose session was busy or whose fleet was unavailable, as
    for a fleet of replicas behind a load balancer when one dies: each step names the step count it
    expects (``expect_steps``), so a retry of a step that was applied gets its answer, never a second step.
    """

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, timeout: float = 60.0,
                 capacity_retries: int = 0, max_retry_wait: float = 30.0, step_retries: int = 0):
        url = base_url or os.environ.get("LLMIX_URL") or DEFAULT_URL
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {url!r}")
        self.base_url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self.token = token if token is not None else os.environ.get("LLMIX_TOKEN") or None
        self.timeout = timeout
        self.capacity_retries = int(capacity_retries)
        self.max_retry_wait = float(max_retry_wait)
        self.step_retries = int(step_retries)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: List[http.client.HTTPConnection] = []

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    # -- the API --

    def health(self) -> Dict[str, Any]:
        """``GET /healthz``: ``{"status": "ok", "sessions": n}``."""
        return self._json("GET", "/healthz")

    def envs(self) -> List[Dict[str, Any]]:
        """The environments the service runs: ``[{id, version, description, difficulties, max_steps}]``."""
        return list(self._json("GET", "/v1/envs")["envs"])

    def env(self, env_id: str) -> Dict[str, Any]:
        """One environment: version, difficulties, max_steps, tools (JSON Schemas), reward components."""
        return self._json("GET", f"/v1/envs/{_seg(env_id)}")

    def tasks(self, env_id: str, difficulty: Optional[str] = None, split: Optional[str] = None, n: int = 10,
              seed: int = 0) -> List[str]:
        """Sample ``n`` task ids of an environment (deterministic for a seed)."""
        query: Dict[str, Any] = {"n": n, "seed": seed}
        if difficulty is not None:
            query["difficulty"] = difficulty
        if split is not None:
            query["split"] = split
        return list(self._json("GET", f"/v1/envs/{_seg(env_id)}/tasks?{urlencode(query)}")["task_ids"])

    def sample_tasks(self, env_id: str, n: int = 10, *, spec: Optional[Dict[str, Any]] = None,
                     state: Optional[Dict[str, Any]] = None, results: Optional[Sequence[Dict[str, Any]]] = None,
                     step: int = 0, split: Optional[str] = None, seed: Optional[int] = None) -> Dict[str, Any]:
        """Draw ``n`` task ids from a task sampler (POST /v1/tasks/sample; docs/tasks.md).

        Start one with ``spec`` (``{"kind": "mix", "weights": {...}}``, ``{"kind": "schedule", "stages":
        [...]}`` or ``{"kind": "curriculum", "cells": [...]}``, plus ``split`` and ``seed``), then continue
        it with the ``state`` of the last answer and the ``results`` (``[{"task_id", "outcome"}]``) of
        the tasks it gave. Returns ``{"task_ids", "state", "weights", "pass_rates"}``; the service keeps
        nothing, so the same request always gives the same answer.
        """
        if (spec is None) == (state is None):
            raise ValueError("give either spec (a new sampler) or state (continue one)")
        body: Dict[str, Any] = {"env": env_id, "n": n, "step": step}
        if spec is not None:
            body["spec"] = spec
        if state is not None:
            body["state"] = state
        if results is not None:
            body["results"] = list(results)
        if split is not None:
            body["split"] = split
        if seed is not None:
            body["seed"] = seed
        return self._json("POST", "/v1/tasks/sample", body)

    def create_session(self, env: str, task_id: str, seed: int, record: bool = False,
                       policy_checkpoint: Optional[str] = None) -> "Session":
        """Start an episode: a new session reset to ``task_id`` with ``seed``."""
        body = _create_body(env, task_id, seed, record, policy_checkpoint)
        return Session(self, self._json("POST", "/v1/sessions", body), record=record, policy_checkpoint=policy_checkpoint)

    def fork(self, snapshot: Mapping[str, Any], record: bool = False, policy_checkpoint: Optional[str] = None) -> "Session":
        """A new session continuing from a snapshot (branching, tree search). Its ``observation`` is
        empty: a snapshot holds the world, not the last observation."""
        body: Dict[str, Any] = {"snapshot": snapshot, "record": bool(record)}
        if policy_checkpoint is not None:
            body["policy_checkpoint"] = policy_checkpoint
        session = Session(self, self._json("POST", "/v1/sessions", body), record=record, policy_checkpoint=policy_checkpoint)
        session.done = isinstance(snapshot, Mapping) and snapshot.get("status", "running") != "running"
        session.steps = _snapshot_steps(snapshot)
        return session

    def session_info(self, session_id: str) -> Dict[str, Any]:
        """``GET /v1/sessions/:id``: a live session's state (steps, ended, idle time, ...)."""
        return self._json("GET", f"/v1/sessions/{_seg(session_id)}")

    def episode(self, episode_id: str) -> Dict[str, Any]:
        """A recorded episode from the trajectory store: ``{"episode": {...}, "steps": [...]}``."""
        return self._json("GET", f"/v1/episodes/{_seg(episode_id)}")

    def replay(self, episode_id: str) -> Dict[str, Any]:
        """Re-run a recorded episode's actions on a fresh environment; the comparison report."""
        return self._json("POST", f"/v1/episodes/{_seg(episode_id)}/replay", {})

    def metrics(self) -> str:
        """``GET /metrics`` (Prometheus text)."""
        return self.request("GET", "/metrics")[1].decode("utf-8")

    def openapi(self) -> Dict[str, Any]:
        """``GET /openapi.json``."""
        return self._json("GET", "/openapi.json")

    # -- transport --

    def close(self) -> None:
        """Close this client's connections (every thread's). The client stays usable: a later request
        opens a new connection."""
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self._local = threading.local()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _json(self, method: str, path: str, body: Any = None) -> Any:
        status, data, _ = self.request(method, path, body)
        if not data:
            return {}
        try:
            return json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise LlmixError("invalid_response", f"{method} {path}: the response is not JSON ({exc})", {}, status) from None

    def request(self, method: str, path: str, body: Any = None) -> "tuple[int, bytes, Dict[str, str]]":
        """Send one request (``body`` is JSON-encoded when not None); ``(status, body, headers)`` of a
        2xx answer, a typed ``LlmixError`` otherwise. Honours ``capacity_retries``."""
        payload = None if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")
        headers = {"Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        attempt = 0
        while True:
            status, data, response_headers = self._send(method, self._prefix + path, payload, headers)
            if 200 <= status < 300:
                return status, data, response_headers
            error = error_from_response(status, data, response_headers)
            if isinstance(error, CapacityError) and attempt < self.capacity_retries:
                attempt += 1
                wait = error.retry_after if error.retry_after is not None else 1.0
                time.sleep(min(max(wait, 0.0), self.max_retry_wait))
                continue
            raise error

    def _connection(self) -> "tuple[http.client.HTTPConnection, bool]":
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.timeout)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn, False

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001
            pass
        self._local.conn = None
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)

    def _send(self, method: str, path: str, payload: Optional[bytes], headers: Dict[str, str]) -> "tuple[int, bytes, Dict[str, str]]":
        for _ in range(2):
            conn, reused = self._connection()
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
                response_headers = {k: v for k, v in response.getheaders()}
                if response.will_close:
                    self._drop(conn)
                return response.status, data, response_headers
            except _STALE as exc:
                self._drop(conn)
                if reused:
                    continue  # the server closed an idle keep-alive connection: once more on a new one
                raise ConnectionFailedError("connection_failed", f"{method} {self.base_url}{path}: {exc or type(exc).__name__}") from None
            except socket.timeout:
                self._drop(conn)
                raise ClientTimeoutError("client_timeout", f"{method} {self.base_url}{path}: no answer within {self.timeout} s") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop(conn)
                raise ConnectionFailedError("connection_failed", f"{method} {self.base_url}{path}: {exc or type(exc).__name__}") from None
        raise ConnectionFailedError("connection_failed", f"{method} {self.base_url}{path}: the connection was closed twice")


def _seg(value: str) -> str:
    """One URL path segment (ids such as episode ids hold "/")."""
    return quote(str(value), safe="")


# ----- sessions ---------------------------------------------------------------------------------------

Action = Union[Mapping[str, Any], Any]


class Session:
    """One live episode on the service.

    Attributes: ``session_id``, ``env``, ``env_version``, ``task_id``, ``seed``, ``observation`` (the
    latest observation dict: the reset observation, then each step's), ``tools`` (JSON-Schema tool
    definitions), ``done`` (the episode ended), ``last`` (the last ``StepResult`` or None), ``episode``
    (the summary once closed). A context manager: leaving the ``with`` block closes the session.
    """

    def __init__(self, client: Client, created: Mapping[str, Any], record: bool = False,
                 policy_checkpoint: Optional[str] = None):
        self.client = client
        self.record = record
        self.policy_checkpoint = policy_checkpoint
        self._adopt(created)

    def _adopt(self, created: Mapping[str, Any]) -> None:
        self.session_id: str = created["session_id"]
        self.env: str = created.get("env", "")
        self.env_version: str = created.get("env_version", "")
        self.task_id: str = created.get("task_id", "")
        self.seed: int = int(created.get("seed", 0))
        self.observation: Dict[str, Any] = dict(created.get("observation") or {})
        self.tools: List[Dict[str, Any]] = list(created.get("tools") or [])
        self.done = False
        self.closed = False
        self.last: Optional[StepResult] = None
        self.episode: Optional[Dict[str, Any]] = None
        # Steps taken, as this client counted them (None after a fork or restore until known again).
        self.steps: Optional[int] = 0

    def __repr__(self) -> str:
        state = "closed" if self.closed else "ended" if self.done else "live"
        return f"Session({self.session_id!r}, env={self.env!r}, task_id={self.task_id!r}, seed={self.seed}, {state})"

    @property
    def text(self) -> str:
        """The latest observation's rendered text."""
        return str(self.observation.get("rendered", ""))

    @property
    def tool_names(self) -> List[str]:
        return [t["name"] for t in self.tools]

    def _path(self, suffix: str = "") -> str:
        return f"/v1/sessions/{_seg(self.session_id)}{suffix}"

    def step(self, action: Action) -> StepResult:
        """Apply one action: ``{"type": "tool_call", "tool": name, "args": {...}}`` or
        ``{"type": "message", "content": text}``. The action is sent as given: a malformed action
        object (unknown type or tool, bad arguments) is answered by the environment (an error
        observation and an ``invalid_call`` reward component), not raised; something that is not a
        JSON object is refused by the service with ``ValidationError`` (``invalid_action``)."""
        body: Dict[str, Any] = {"action": action}
        if self.steps is not None:
            body["expect_steps"] = self.steps
        attempt = 0
        while True:
            try:
                data = self.client._json("POST", self._path("/step"), body)
                break
            except (ConnectionFailedError, SessionBusyError, FleetUnavailableError):
                if self.steps is None or attempt >= self.client.step_retries:
                    raise
                attempt += 1
                time.sleep(min(0.2 * attempt, self.client.max_retry_wait))
        result = StepResult.from_json(data)
        if self.steps is not None:
            self.steps += 1
        self.observation = result.observation
        self.last = result
        if result.done:
            self.done = True
        return result

    def tool_call(self, tool: str, /, **args: Any) -> StepResult:
        """Call a tool: ``session.tool_call("lookup_customer", query="ada@example.com")``."""
        return self.step({"type": "tool_call", "tool": tool, "args": args})

    def message(self, content: str) -> StepResult:
        """Send a message (a reply to the simulated user, or a final answer)."""
        return self.step({"type": "message", "content": content})

    def info(self) -> Dict[str, Any]:
        """The session's state on the server (steps, ended, record, idle_ms, ...)."""
        return self.client.session_info(self.session_id)

    def snapshot(self) -> Dict[str, Any]:
        """The full world state; ``restore`` it here or ``Client.fork`` it into a new session."""
        return self.client._json("GET", self._path("/snapshot"))["snapshot"]

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Continue this session exactly from a snapshot (of the same environment). ``observation`` is
        not rewound (a snapshot holds no observation); ``done`` follows the snapshot's status."""
        self.client._json("POST", self._path("/restore"), {"snapshot": snapshot})
        self.task_id = snapshot.get("task_id", self.task_id)
        if "seed" in snapshot:
            self.seed = int(snapshot["seed"])
        self.done = snapshot.get("status", "running") != "running"
        self.steps = _snapshot_steps(snapshot)
        self.last = None

    def fork(self, record: bool = False) -> "Session":
        """A new session continuing from this one's current state (snapshot + fork)."""
        return self.client.fork(self.snapshot(), record=record, policy_checkpoint=self.policy_checkpoint)

    def close(self) -> Dict[str, Any]:
        """End the session; the episode summary (outcome, total_reward, reward_components, verdict,
        ...). Closing twice returns the same summary without a request."""
        if self.closed:
            return self.episode or {}
        data = self.client._json("DELETE", self._path())
        self.closed = True
        self.episode = dict(data.get("episode") or {})
        return self.episode

    def reset(self, task_id: Optional[str] = None, seed: Optional[int] = None) -> Dict[str, Any]:
        """Start a new episode in this object: the service has no reset operation (a new episode is a new
        session), so this closes the current session (ignoring ``unknown_session``: reaped or already
        gone) and creates a new one of the same environment, with the same task and seed unless given.
        ``session_id`` changes. Returns the new first observation."""
        if not self.closed:
            try:
                self.close()
            except NotFoundError as exc:
                if exc.code != "unknown_session":
                    raise
        created = self.client._json("POST", "/v1/sessions", _create_body(
            self.env, self.task_id if task_id is None else task_id, self.seed if seed is None else seed,
            self.record, self.policy_checkpoint))
        self._adopt(created)
        return self.observation

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self.close()
        except NotFoundError as error:
            self.closed = True
            if error.code != "unknown_session" and exc_type is None:
                raise
        except LlmixError:
            if exc_type is None:
                raise  # an exception already leaving the block is not masked by a failed close


def _create_body(env: str, task_id: str, seed: int, record: bool, policy_checkpoint: Optional[str]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"env": env, "task_id": task_id, "seed": int(seed), "record": bool(record)}
    if policy_checkpoint is not None:
        body["policy_checkpoint"] = policy_checkpoint
    return body


class TaskPool:
    """The task ids an adapter draws episodes from: the given ones, or ``size`` ids sampled once from the
    service (lazily, on first use; thread-safe). Shared by the Gymnasium and TRL adapters."""

    def __init__(self, client: Client, env_id: str, task_ids: Optional[List[str]] = None, difficulty: Optional[str] = None,
                 split: Optional[str] = None, seed: int = 0, size: int = 64):
        self._client = client
        self._env_id = env_id
        self._ids = list(task_ids) if task_ids is not None else None
        self._difficulty = difficulty
        self._split = split
        self._seed = seed
        self._size = size
        self._lock = threading.Lock()

    def ids(self) -> List[str]:
        """The task ids; ValueError when the service sampled none."""
        with self._lock:
            if self._ids is None:
                self._ids = self._client.tasks(self._env_id, difficulty=self._difficulty, split=self._split, n=self._size, seed=self._seed)
            if not self._ids:
                raise ValueError(f"no task ids to sample for {self._env_id}")
            return self._ids

