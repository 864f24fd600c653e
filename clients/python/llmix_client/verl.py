"""verl adapter: LLMix environments as verl tools, interaction, agent loop and reward function.

Written against verl 0.8.0.dev, commit b178a3cd56f58b2d502255daba591e92833930a7 (github.com/volcengine/verl),
whose interfaces it implements (see docs/verl.md for a complete training config):

- ``verl/tools/base_tool.py`` ``BaseTool(config, tool_schema)`` with ``async create(instance_id=None,
  **kwargs) -> (instance_id, ToolResponse)``, ``async execute(instance_id, parameters, **kwargs) ->
  (ToolResponse, reward, metrics)``, ``async calc_reward(instance_id, **kwargs) -> float`` and ``async
  release(instance_id, **kwargs)``; tools are built by ``verl/tools/utils/tool_registry.py``
  ``initialize_tools_from_config`` from the YAML ``llmix export --format verl-tools`` writes.
- ``verl/interactions/base.py`` ``BaseInteraction(config)`` with ``start_interaction(instance_id,
  **interaction_kwargs)``, ``generate_response(instance_id, messages, **kwargs) -> (should_terminate,
  text, score, data)``, ``calculate_score`` and ``finalize_interaction``.
- ``verl/experimental/agent_loop/tool_agent_loop.py`` ``ToolAgentLoop`` (registered as "tool_agent"):
  its ``_call_tool`` calls ``create(create_kwargs=tools_kwargs[name]["create_kwargs"])``, ``execute(
  instance_id, args, agent_data=agent_data)`` and ``release(instance_id)`` for EVERY call, with a fresh
  instance id each time; the trajectory's id is ``agent_data.request_id``, which it also passes to the
  interaction.
- ``verl/experimental/reward_loop/reward_manager/naive.py`` and ``verl/workers/reward_manager/naive.py``:
  ``compute_score(data_source, solution_str, ground_truth, extra_info)`` where ``extra_info`` carries the
  agent loop's ``extra_fields`` (reward loop) or its ``reward_scores`` as ``rollout_reward_scores``.

One LLMix session per trajectory. Sessions live in a process-wide registry (``TRAJECTORIES``) keyed by the
trajectory id: verl's ``request_id`` (``agent_data.request_id`` in tool calls, the interaction's
``instance_id``), or the ``instance_id`` a caller passes to ``create`` itself. The session is created on the
first action (a tool call or a message) with the task bound to the trajectory (``env``, ``task_id``,
``seed``: from the row through the agent loop or the interaction, or from ``create_kwargs``), and closed
when the episode ends (its slot on the service is freed at once), when the trajectory is finished
(``LlmixAgentLoop`` at the end of every rollout, ``finalize_interaction``), or on ``release`` of an instance
that owns its trajectory (``create`` was given an ``instance_id``, or there is no ``agent_data``).
A ``release`` of one of ``ToolAgentLoop``'s per-call instances leaves the trajectory's session open.

Classes (built on first access, subclassing verl's, so verl is imported only then; the module itself
imports without verl, like ``llmix_client.gym``):

- ``LlmixTool`` (``BaseTool``): one instance per environment tool (``tool_schema.function.name`` is the
  tool's name). A call steps the trajectory's session with a ``tool_call`` action and returns the
  observation text; the step reward is the tool reward. Arguments the environment rejects (wrong types,
  missing fields, not an object) come back as the environment's error observation, and a call after the
  episode ended, or a failure of the service, as an ``Error: ...`` text: never an exception.
- ``LlmixInteraction`` (``BaseInteraction``): the model's turn without a tool call is the ``message``
  action (to the simulated user, or the final answer): ``generate_response`` sends the last assistant
  message (reasoning up to a ``</think>`` dropped) and returns the next observation as the user's turn,
  ending the sequence when the episode ends. Without it the model's messages never reach the environment.
- ``LlmixAgentLoop`` (``ToolAgentLoop``, agent name "llmix_agent"): binds the row's task to the
  trajectory, shows the model only the tools of the row's environment (when the tool config names
  environments), stops as soon as the episode ends, closes the session at the end of the rollout and
  puts the episode's record in ``extra_fields["reward_scores"]["llmix"]`` for ``compute_score``.
- ``LlmixMultiTurnSFTDataset`` (``MultiTurnSFTDataset``): reads ``llmix export --format verl-sft`` files,
  decoding the JSON-string tool parameters and call arguments and dropping null message fields.

``compute_score(data_source, solution_str, ground_truth, extra_info=None)`` returns the episode's outcome
(the final step's ``task`` reward component; 0.0 for an episode that did not end).
"""
from __future__ import annotations

import asyncio
import importlib
import json
import os
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .client import Client, LlmixError, NotFoundError, Session, StepResult

__all__ = [
    "VERL_VERSION",
    "VERL_COMMIT",
    "AGENT_NAME",
    "INTERACTION_NAME",
    "TOOLS_KWARGS_KEY",
    "RECORD_KEY",
    "Task",
    "ServiceSettings",
    "Trajectory",
    "TrajectoryRegistry",
    "TRAJECTORIES",
    "EpisodeEnded",
    "LlmixToolCore",
    "LlmixInteractionCore",
    "compute_score",
    "find_record",
    "parse_task",
    "task_of_row",
    "settings_from_config",
    "assistant_text",
    "sft_messages",
    "sft_tools",
    "tool_class",
    "interaction_class",
    "agent_loop_class",
    "sft_dataset_class",
    "register_agent_loop",
    "close_all",
]

#: The verl version and commit this module was written against.
VERL_VERSION = "0.8.0.dev"
VERL_COMMIT = "b178a3cd56f58b2d502255daba591e92833930a7"
#: The agent loop name the ``verl`` export's rows ask for.
AGENT_NAME = "llmix_agent"
#: The interaction name the ``verl`` export's rows ask for.
INTERACTION_NAME = "llmix"
#: The fixed key of ``extra_info.tools_kwargs`` in the ``verl`` export.
TOOLS_KWARGS_KEY = "llmix"
#: The key of the episode record in ``extra_fields["reward_scores"]``.
RECORD_KEY = "llmix"


# ----- tasks and settings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """What an LLMix session is created with."""

    env: str
    task_id: str
    seed: int


def _integer(value: Any) -> Optional[int]:
    """An int from an int-like value (numpy integers included), None otherwise (bools are not ints)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    index = getattr(value, "__index__", None)
    if callable(index):
        try:
            return int(index())
        except (TypeError, ValueError):
            return None
    return None


def parse_task(value: Any, where: str) -> Task:
    """The task of a mapping with ``env``, ``task_id`` and ``seed``; ValueError naming ``where`` otherwise."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a mapping with env, task_id and seed, got {type(value).__name__}")
    env, task_id, seed = value.get("env"), value.get("task_id"), _integer(value.get("seed"))
    if not isinstance(env, str) or not env:
        raise ValueError(f"{where}: env must be a non-empty string, got {value.get('env')!r}")
    if not isinstance(task_id, str) or not task_id:
        raise ValueError(f"{where}: task_id must be a non-empty string, got {value.get('task_id')!r}")
    if seed is None or seed < 0:
        raise ValueError(f"{where}: seed must be a non-negative integer, got {value.get('seed')!r}")
    return Task(env, task_id, seed)


def _has_task(value: Any) -> bool:
    return isinstance(value, Mapping) and any(k in value for k in ("env", "task_id", "seed"))


def task_of_row(row: Mapping[str, Any]) -> Task:
    """The task of a verl dataset row (the agent loop's kwargs): ``tools_kwargs["llmix"]["create_kwargs"]``,
    else ``interaction_kwargs``, else ``extra_info`` (env, task_id, seed); ValueError when none holds one."""
    tools_kwargs = row.get("tools_kwargs")
    if isinstance(tools_kwargs, Mapping) and isinstance(tools_kwargs.get(TOOLS_KWARGS_KEY), Mapping):
        create = tools_kwargs[TOOLS_KWARGS_KEY].get("create_kwargs")
        if _has_task(create):
            return parse_task(create, "tools_kwargs.llmix.create_kwargs")
    if _has_task(row.get("interaction_kwargs")):
        return parse_task(row["interaction_kwargs"], "interaction_kwargs")
    if _has_task(row.get("extra_info")):
        return parse_task(row["extra_info"], "extra_info")
    raise ValueError("the row names no LLMix task: expected extra_info.tools_kwargs.llmix.create_kwargs, "
                     "extra_info.interaction_kwargs or extra_info with env, task_id and seed "
                     "(rows of `llmix export --format verl` have all three)")


@dataclass(frozen=True)
class ServiceSettings:
    """How a component reaches the service: from its verl ``config`` (``url``, ``timeout``, ``record``,
    ``policy_checkpoint``, ``capacity_retries``); the bearer token is ``$LLMIX_TOKEN`` (never in a YAML)."""

    url: Optional[str] = None
    timeout: float = 60.0
    record: bool = False
    policy_checkpoint: Optional[str] = None
    capacity_retries: int = 0

    def client(self) -> Client:
        """The shared client of these settings (one per process; connections are per thread)."""
        key = (self.url, self.timeout, self.capacity_retries)
        with _CLIENTS_LOCK:
            client = _CLIENTS.get(key)
            if client is None:
                client = _CLIENTS[key] = Client(self.url, timeout=self.timeout, capacity_retries=self.capacity_retries)
            return client


_CLIENTS: Dict[Tuple[Optional[str], float, int], Client] = {}
_CLIENTS_LOCK = threading.Lock()


def settings_from_config(config: Optional[Mapping[str, Any]]) -> ServiceSettings:
    """The service settings of a verl tool or interaction ``config`` (other keys are verl's and ignored);
    ValueError on a malformed value."""
    config = dict(config or {})
    url = config.get("url", os.environ.get("LLMIX_URL") or None)
    if url is not None and (not isinstance(url, str) or not url):
        raise ValueError(f"config.url must be a non-empty string, got {url!r}")
    timeout = config.get("timeout", 60.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"config.timeout must be a positive number of seconds, got {timeout!r}")
    record = config.get("record", False)
    if not isinstance(record, bool):
        raise ValueError(f"config.record must be true or false, got {record!r}")
    checkpoint = config.get("policy_checkpoint")
    if checkpoint is not None and not isinstance(checkpoint, str):
        raise ValueError(f"config.policy_checkpoint must be a string, got {checkpoint!r}")
    retries = _integer(config.get("capacity_retries", 0))
    if retries is None or retries < 0:
        raise ValueError(f"config.capacity_retries must be a non-negative integer, got {config.get('capacity_retries')!r}")
    return ServiceSettings(url, float(timeout), record, checkpoint, retries)


# ----- trajectories --------------------------------------------------------------------------------------


class EpisodeEnded(Exception):
    """An action on a trajectory whose episode already ended (or failed)."""


class Trajectory:
    """One verl trajectory and its LLMix session (created on the first action). Thread-safe: actions on
    one trajectory run one at a time (verl may run a turn's tool calls in parallel)."""

    def __init__(self, key: str):
        self.key = key
        self.task: Optional[Task] = None
        self.settings: Optional[ServiceSettings] = None
        self.session: Optional[Session] = None
        self.session_id: Optional[str] = None
        self.steps = 0
        self.done = False
        self.outcome: Optional[float] = None
        self.total_reward = 0.0
        self.episode: Optional[Dict[str, Any]] = None
        self.error: Optional[str] = None
        self.finished = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Trajectory({self.key!r}, task={self.task!r}, session={self.session_id!r}, done={self.done})"

    def step(self, action: Mapping[str, Any]) -> StepResult:
        """Apply one action (blocking). EpisodeEnded when the episode is over; LlmixError from the service
        (recorded in ``error``; the trajectory is then over)."""
        with self._lock:
            if self.done or self.finished:
                raise EpisodeEnded(self.error or "episode_ended")
            try:
                if self.session is None:
                    if self.task is None:
                        raise ValueError(f"trajectory {self.key!r} has no LLMix task: bind one (agent loop, interaction or create_kwargs)")
                    settings = self.settings or ServiceSettings()
                    self.session = settings.client().create_session(self.task.env, self.task.task_id, self.task.seed,
                                                                    record=settings.record, policy_checkpoint=settings.policy_checkpoint)
                    self.session_id = self.session.session_id
                result = self.session.step(dict(action))
            except LlmixError as exc:
                self.error = exc.code
                self.done = True
                self._close_quietly()
                raise
            self.steps += 1
            self.total_reward += result.reward
            if result.done:
                self.done = True
                self.outcome = float(result.reward_components.get("task", 0.0))
                self._close_quietly()
            return result

    def finish(self) -> Dict[str, Any]:
        """Close the session if open (blocking) and return the record ``compute_score`` reads."""
        with self._lock:
            self.finished = True
            self._close_quietly()
            return self.record()

    def record(self) -> Dict[str, Any]:
        """The episode's record: task, session id, outcome (0.0 unless the episode ended), ended, steps,
        total reward and the error code of a service failure (None)."""
        task = self.task
        return {
            "env": task.env if task else None,
            "task_id": task.task_id if task else None,
            "seed": task.seed if task else None,
            "session_id": self.session_id,
            "outcome": self.outcome if self.outcome is not None else 0.0,
            "ended": self.outcome is not None,
            "steps": self.steps,
            "total_reward": self.total_reward,
            "error": self.error,
        }

    def _close_quietly(self) -> None:
        session, self.session = self.session, None
        if session is None or session.closed:
            return
        try:
            self.episode = session.close()
        except LlmixError as exc:  # reaped, or the service is gone: the episode is over either way
            if not (isinstance(exc, NotFoundError) and exc.code == "unknown_session") and self.error is None:
                self.error = exc.code


class TrajectoryRegistry:
    """The trajectories of this process, by verl trajectory id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: Dict[str, Trajectory] = {}

    def bind(self, key: str, task: Optional[Task] = None, settings: Optional[ServiceSettings] = None) -> Trajectory:
        """The trajectory ``key`` (created if new), with ``task`` and ``settings`` set when it has none.
        ValueError when it already has a different task."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"a trajectory id must be a non-empty string, got {key!r}")
        with self._lock:
            trajectory = self._items.get(key)
            if trajectory is None:
                trajectory = self._items[key] = Trajectory(key)
            if task is not None:
                if trajectory.task is None:
                    trajectory.task = task
                elif trajectory.task != task:
                    raise ValueError(f"trajectory {key!r} is bound to {trajectory.task}, not {task}")
            if settings is not None and trajectory.settings is None:
                trajectory.settings = settings
            return trajectory

    def get(self, key: str) -> Optional[Trajectory]:
        with self._lock:
            return self._items.get(key)

    def pop(self, key: str) -> Optional[Trajectory]:
        with self._lock:
            return self._items.pop(key, None)

    def keys(self) -> List[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    async def finish(self, key: str) -> Dict[str, Any]:
        """Forget trajectory ``key`` and close its session; its record (an empty one if unknown)."""
        trajectory = self.pop(key)
        if trajectory is None:
            return Trajectory(key).record()
        return await asyncio.to_thread(trajectory.finish)


#: The process-wide registry the tool, interaction and agent loop share.
TRAJECTORIES = TrajectoryRegistry()


def close_all() -> int:
    """Close every open trajectory of this process (e.g. at shutdown); how many there were."""
    keys = TRAJECTORIES.keys()
    for key in keys:
        trajectory = TRAJECTORIES.pop(key)
        if trajectory is not None:
            trajectory.finish()
    return len(keys)


def _task_of_agent_data(agent_data: Any) -> Optional[Task]:
    """The task in verl's ``AgentData`` (its ``tools_kwargs`` / ``interaction_kwargs``), if any."""
    if agent_data is None:
        return None
    row = {"tools_kwargs": getattr(agent_data, "tools_kwargs", None), "interaction_kwargs": getattr(agent_data, "interaction_kwargs", None)}
    try:
        return task_of_row(row)
    except ValueError:
        return None


def _error_text(exc: LlmixError) -> str:
    return f"Error: the LLMix service failed ([{exc.code}] {exc.message}); the episode is over."


_ENDED_TEXT = "Error: the episode has ended; no further actions are accepted."


# ----- the tool ------------------------------------------------------------------------------------------


@dataclass
class _Handle:
    key: Optional[str]
    task: Optional[Task]
    owns: bool


class LlmixToolCore:
    """The logic of ``LlmixTool`` without verl: the same async methods, returning plain text.

    ``config`` is the tool config entry's ``config`` (``env``, and the ``ServiceSettings`` keys); ``name``
    is the environment tool this instance calls."""

    def __init__(self, config: Optional[Mapping[str, Any]], name: str):
        if not isinstance(name, str) or not name:
            raise ValueError(f"the tool name must be a non-empty string, got {name!r}")
        config = dict(config or {})
        self.name = name
        self.env: Optional[str] = config.get("env") if isinstance(config.get("env"), str) else None
        self.settings = settings_from_config(config)
        self._handles: Dict[str, _Handle] = {}

    async def create(self, instance_id: Optional[str] = None, **kwargs: Any) -> str:
        """Register an instance; its id. The task comes from ``create_kwargs`` (verl's ``ToolAgentLoop``) or
        the keyword arguments themselves (``env``, ``task_id``, ``seed``), when given. With an
        ``instance_id``, the instance is that trajectory's and owns it (``release`` closes the session)."""
        create_kwargs = kwargs.get("create_kwargs")
        if _has_task(create_kwargs):
            task: Optional[Task] = parse_task(create_kwargs, f"{self.name}: create_kwargs")
        elif _has_task(kwargs):
            task = parse_task(kwargs, f"{self.name}: create")
        else:
            task = None
        if instance_id is not None:
            TRAJECTORIES.bind(str(instance_id), task, self.settings)
            self._handles[str(instance_id)] = _Handle(str(instance_id), task, owns=True)
            return str(instance_id)
        handle_id = uuid.uuid4().hex
        self._handles[handle_id] = _Handle(None, task, owns=False)
        return handle_id

    def _trajectory(self, instance_id: str, agent_data: Any) -> Trajectory:
        handle = self._handles.get(instance_id)
        if handle is None:  # an id never created here: take it as the trajectory's id
            handle = self._handles[instance_id] = _Handle(instance_id, None, owns=False)
        if handle.key is None:
            request_id = getattr(agent_data, "request_id", None)
            if isinstance(request_id, str) and request_id:
                handle.key = request_id
            else:  # no trajectory around the call: the instance is its own trajectory
                handle.key, handle.owns = instance_id, True
        task = handle.task or _task_of_agent_data(agent_data)
        return TRAJECTORIES.bind(handle.key, task, self.settings)

    async def execute(self, instance_id: str, parameters: Any, **kwargs: Any) -> Tuple[str, float, Dict[str, Any]]:
        """Call the tool on the trajectory's session: ``(observation text, step reward, metrics)``. Bad
        arguments, a call after the end and service failures are answered with text, never raised."""
        trajectory = self._trajectory(str(instance_id), kwargs.get("agent_data"))
        args = dict(parameters) if isinstance(parameters, Mapping) else parameters
        try:
            json.dumps(args)
        except (TypeError, ValueError) as exc:
            return f"Error: the arguments of {self.name} are not JSON ({exc}).", 0.0, {"error": "invalid_arguments"}
        action = {"type": "tool_call", "tool": self.name, "args": args}
        try:
            result = await asyncio.to_thread(trajectory.step, action)
        except EpisodeEnded:
            return _ENDED_TEXT, 0.0, {"done": True}
        except LlmixError as exc:
            return _error_text(exc), 0.0, {"error": exc.code, "done": True}
        status = (result.tool_result or {}).get("status")
        return result.text, float(result.reward), {"status": status, "done": result.done}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The trajectory's outcome so far: the ``task`` component once the episode ended, else 0.0."""
        handle = self._handles.get(str(instance_id))
        key = handle.key if handle is not None and handle.key is not None else str(instance_id)
        trajectory = TRAJECTORIES.get(key)
        return float(trajectory.outcome) if trajectory is not None and trajectory.outcome is not None else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the instance; close its trajectory's session when the instance owns the trajectory."""
        handle = self._handles.pop(str(instance_id), None)
        if handle is not None and handle.owns and handle.key is not None:
            await TRAJECTORIES.finish(handle.key)


# ----- the interaction -----------------------------------------------------------------------------------


def assistant_text(messages: Any) -> str:
    """The content of the last assistant message (text parts joined), with reasoning up to the last
    ``</think>`` removed and surrounding whitespace stripped; "" when there is none."""
    content: Any = ""
    for message in reversed(list(messages or [])):
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            content = message.get("content")
            break
    if isinstance(content, list):
        content = "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping) and part.get("type") == "text")
    text = content if isinstance(content, str) else ""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text.strip()


class LlmixInteractionCore:
    """The logic of ``LlmixInteraction`` without verl. ``config`` holds the ``ServiceSettings`` keys (and
    ``name``, which verl sets)."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None):
        config = dict(config or {})
        self.name = str(config.get("name", INTERACTION_NAME))
        self.settings = settings_from_config(config)

    async def start_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> str:
        """Bind the trajectory ``instance_id`` (verl's request id) to the task in ``interaction_kwargs``."""
        key = str(instance_id) if instance_id is not None else uuid.uuid4().hex
        task = parse_task(kwargs, "interaction_kwargs") if _has_task(kwargs) else None
        TRAJECTORIES.bind(key, task, self.settings)
        return key

    async def generate_response(self, instance_id: str, messages: Any, **kwargs: Any) -> Tuple[bool, str, float, Dict[str, Any]]:
        """Send the last assistant message as the ``message`` action: ``(episode ended, next observation
        text, step reward, {"done", "outcome"})``."""
        task = parse_task(kwargs, "interaction_kwargs") if _has_task(kwargs) else None
        trajectory = TRAJECTORIES.bind(str(instance_id), task, self.settings)
        action = {"type": "message", "content": assistant_text(messages)}
        try:
            result = await asyncio.to_thread(trajectory.step, action)
        except EpisodeEnded:
            return True, _ENDED_TEXT, 0.0, {"done": True, "outcome": trajectory.outcome}
        except LlmixError as exc:
            return True, _error_text(exc), 0.0, {"done": True, "error": exc.code}
        return result.done, result.text, float(result.reward), {"done": result.done, "outcome": trajectory.outcome}

    async def calculate_score(self, instance_id: Optional[str] = None, **kwargs: Any) -> float:
        """The trajectory's outcome so far (0.0 until the episode ended)."""
        trajectory = TRAJECTORIES.get(str(instance_id)) if instance_id is not None else None
        return float(trajectory.outcome) if trajectory is not None and trajectory.outcome is not None else 0.0

    async def finalize_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> None:
        """Close the trajectory's session and forget it."""
        if instance_id is not None:
            await TRAJECTORIES.finish(str(instance_id))


# ----- the reward function -------------------------------------------------------------------------------


def find_record(extra_info: Any) -> Optional[Mapping[str, Any]]:
    """The episode record ``LlmixAgentLoop`` left for the reward function: ``extra_info["reward_scores"]
    ["llmix"]`` (verl's reward loop merges the agent loop's extra fields into ``extra_info``) or
    ``extra_info["rollout_reward_scores"]["llmix"]`` (the trainer's reward managers)."""
    if not isinstance(extra_info, Mapping):
        return None
    for key in ("reward_scores", "rollout_reward_scores"):
        scores = extra_info.get(key)
        if isinstance(scores, Mapping) and isinstance(scores.get(RECORD_KEY), Mapping):
            return scores[RECORD_KEY]
    return None


def compute_score(data_source: str, solution_str: Any, ground_truth: Any, extra_info: Optional[Mapping[str, Any]] = None,
                  on_error: str = "zero", **kwargs: Any) -> float:
    """verl's custom reward function (``custom_reward_function.path: pkg://llmix_client.verl``, ``name:
    compute_score``): the outcome of the trajectory's LLMix episode, from the record the agent loop left
    in ``extra_info``. ``solution_str`` is not read: the environment's verifier judged the episode.

    ValueError when ``extra_info`` holds no record (the rollout did not run ``llmix_agent``) or the record
    is of another task than ``data_source`` / ``ground_truth``. An episode cut short by a service failure
    scores 0.0, or raises RuntimeError with ``on_error="raise"`` (``custom_reward_function.reward_kwargs``)."""
    if on_error not in ("zero", "raise"):
        raise ValueError(f"on_error must be 'zero' or 'raise', got {on_error!r}")
    record = find_record(extra_info)
    if record is None:
        raise ValueError("extra_info has no LLMix episode record (reward_scores.llmix): roll the rows out with "
                         f"agent_name '{AGENT_NAME}' (llmix_client.verl.LlmixAgentLoop, see docs/verl.md)")
    if record.get("env") is not None and data_source != record.get("env"):
        raise ValueError(f"data_source {data_source!r} is not the episode's environment {record.get('env')!r}")
    expected = _ground_truth_task(ground_truth)
    if expected is not None and record.get("task_id") is not None:
        got = (record.get("env"), record.get("task_id"), _integer(record.get("seed")))
        if (expected.env, expected.task_id, expected.seed) != got:
            raise ValueError(f"ground_truth names {expected}, but the episode ran {got}")
    if record.get("error") and on_error == "raise":
        raise RuntimeError(f"the LLMix episode of {record.get('task_id')} failed in the service: {record.get('error')}")
    outcome = record.get("outcome")
    return float(outcome) if isinstance(outcome, (int, float)) and not isinstance(outcome, bool) else 0.0


def _ground_truth_task(ground_truth: Any) -> Optional[Task]:
    """The task in a ``verl`` export's ground truth (JSON of env, task_id, seed), or None if it is not one."""
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError:
            return None
    try:
        return parse_task(ground_truth, "ground_truth")
    except ValueError:
        return None


# ----- SFT rows ------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Lists and dicts of plain Python values from what pandas gives (numpy arrays included)."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, (str, bytes)):
        value = tolist()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def sft_messages(messages: Any) -> List[Dict[str, Any]]:
    """The messages of a ``verl-sft`` row as chat templates expect them: null fields dropped, tool-call
    ``arguments`` decoded from JSON into objects."""
    out: List[Dict[str, Any]] = []
    for message in _plain(messages) or []:
        clean = {k: v for k, v in dict(message).items() if v is not None}
        if isinstance(clean.get("tool_calls"), list):
            calls = []
            for call in clean["tool_calls"]:
                call = {k: v for k, v in dict(call).items() if v is not None}
                function = dict(call.get("function") or {})
                if "arguments" in function:
                    function["arguments"] = _decoded(function["arguments"])
                call["function"] = function
                calls.append(call)
            clean["tool_calls"] = calls
        out.append(clean)
    return out


def sft_tools(tools: Any) -> Optional[List[Dict[str, Any]]]:
    """The tools of a ``verl-sft`` row with each ``parameters`` decoded from JSON (None stays None)."""
    if tools is None:
        return None
    out: List[Dict[str, Any]] = []
    for tool in _plain(tools):
        tool = dict(tool)
        function = dict(tool.get("function") or {})
        if "parameters" in function:
            function["parameters"] = _decoded(function["parameters"])
        tool["function"] = function
        out.append(tool)
    return out


# ----- the verl classes (built lazily) -------------------------------------------------------------------

# (name, base class id) -> (base class, built class): the base is kept so its id is not reused.
_BUILT: Dict[Tuple[str, int], Tuple[type, type]] = {}
_BUILD_LOCK = threading.Lock()


def _verl(module: str, attribute: str) -> Any:
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        raise ImportError(f"llmix_client.verl needs verl ({module}.{attribute}): {exc}. "
                          f"It was written against verl {VERL_VERSION} (commit {VERL_COMMIT[:8]}).") from exc


def _build(name: str, base: type, make: Callable[[type], type]) -> type:
    with _BUILD_LOCK:
        cached = _BUILT.get((name, id(base)))
        if cached is not None and cached[0] is base:
            return cached[1]
        cls = make(base)
        # Resolvable as llmix_client.verl.<name> (verl's registries, hydra, Ray's pickling by reference).
        cls.__module__ = __name__
        cls.__qualname__ = name
        cls.__name__ = name
        _BUILT[(name, id(base))] = (base, cls)
        return cls


def tool_class() -> type:
    """``LlmixTool``: a subclass of verl's ``BaseTool`` (verl is imported here, not before)."""
    base_tool = _verl("verl.tools.base_tool", "BaseTool")
    tool_response = _verl("verl.tools.schemas", "ToolResponse")

    def make(base: type) -> type:
        class LlmixTool(base):  # type: ignore[misc,valid-type]
            """An LLMix environment tool for verl (see ``llmix_client.verl``)."""

            def __init__(self, config: dict, tool_schema: Any):
                super().__init__(config, tool_schema)
                self.core = LlmixToolCore(config, self.name)
                self.llmix_env = self.core.env

            async def create(self, instance_id: Optional[str] = None, **kwargs: Any):
                return await self.core.create(instance_id, **kwargs), tool_response()

            async def execute(self, instance_id: str, parameters: dict, **kwargs: Any):
                text, reward, metrics = await self.core.execute(instance_id, parameters, **kwargs)
                return tool_response(text=text), reward, metrics

            async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
                return await self.core.calc_reward(instance_id, **kwargs)

            async def release(self, instance_id: str, **kwargs: Any) -> None:
                await self.core.release(instance_id, **kwargs)

        return LlmixTool

    return _build("LlmixTool", base_tool, make)


def interaction_class() -> type:
    """``LlmixInteraction``: a subclass of verl's ``BaseInteraction``."""
    base_interaction = _verl("verl.interactions.base", "BaseInteraction")

    def make(base: type) -> type:
        class LlmixInteraction(base):  # type: ignore[misc,valid-type]
            """The message channel of an LLMix episode for verl (see ``llmix_client.verl``)."""

            def __init__(self, config: dict):
                super().__init__(config)
                self.core = LlmixInteractionCore(config)

            async def start_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> str:
                return await self.core.start_interaction(instance_id, **kwargs)

            async def generate_response(self, instance_id: str, messages: Any, **kwargs: Any):
                return await self.core.generate_response(instance_id, messages, **kwargs)

            async def calculate_score(self, instance_id: Optional[str] = None, **kwargs: Any) -> float:
                return await self.core.calculate_score(instance_id, **kwargs)

            async def finalize_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> None:
                await self.core.finalize_interaction(instance_id, **kwargs)

        return LlmixInteraction

    return _build("LlmixInteraction", base_interaction, make)


# tool config path -> {env or None: [tool schema dict]}: each config is read once per process.
_ENV_SCHEMAS: Dict[str, Dict[Optional[str], List[Dict[str, Any]]]] = {}


def _env_schemas(path: str) -> Dict[Optional[str], List[Dict[str, Any]]]:
    cached = _ENV_SCHEMAS.get(path)
    if cached is None:
        initialize = _verl("verl.tools.utils.tool_registry", "initialize_tools_from_config")
        cached = {}
        for tool in initialize(path):
            env = getattr(tool, "llmix_env", None)
            cached.setdefault(env, []).append(tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True))
        _ENV_SCHEMAS[path] = cached
    return cached


def agent_loop_class() -> type:
    """``LlmixAgentLoop``: a subclass of verl's ``ToolAgentLoop`` (see the module comment)."""
    tool_agent_loop = _verl("verl.experimental.agent_loop.tool_agent_loop", "ToolAgentLoop")
    agent_state = _verl("verl.experimental.agent_loop.tool_agent_loop", "AgentState")

    def make(base: type) -> type:
        class LlmixAgentLoop(base):  # type: ignore[misc,valid-type]
            """verl's tool agent loop with one LLMix session per trajectory (see ``llmix_client.verl``)."""

            def __init__(self, *args: Any, **kwargs: Any):
                super().__init__(*args, **kwargs)
                if not getattr(self, "interaction_config_file", None):
                    raise ValueError(f"{AGENT_NAME} needs actor_rollout_ref.rollout.multi_turn.interaction_config_path: an "
                                     f"interaction named '{INTERACTION_NAME}' of class llmix_client.verl.LlmixInteraction, "
                                     "without which the model's messages never reach the environment (docs/verl.md)")
                self._llmix_key: Optional[str] = None
                self._llmix_task: Optional[Task] = None

            async def run(self, sampling_params: Dict[str, Any], **kwargs: Any):
                self._llmix_task = task_of_row(kwargs)
                self._llmix_key = None
                path = _tool_config_path(self)
                if path:
                    by_env = _env_schemas(path)
                    if any(env is not None for env in by_env):
                        self.tool_schemas = by_env.get(None, []) + by_env.get(self._llmix_task.env, [])
                try:
                    output = await super().run(sampling_params, **kwargs)
                except BaseException:
                    if self._llmix_key is not None:
                        await TRAJECTORIES.finish(self._llmix_key)
                    raise
                if self._llmix_key is not None:
                    record = await TRAJECTORIES.finish(self._llmix_key)
                else:  # nothing ran (the loop stopped before its first generation)
                    trajectory = Trajectory("")
                    trajectory.task = self._llmix_task
                    record = trajectory.record()
                scores = dict(output.extra_fields.get("reward_scores") or {})
                scores[RECORD_KEY] = record
                output.extra_fields["reward_scores"] = scores
                return output

            async def _handle_pending_state(self, agent_data: Any, sampling_params: Dict[str, Any]):
                self._llmix_key = agent_data.request_id
                TRAJECTORIES.bind(agent_data.request_id, self._llmix_task)
                return await super()._handle_pending_state(agent_data, sampling_params)

            async def _handle_processing_tools_state(self, agent_data: Any):
                state = await super()._handle_processing_tools_state(agent_data)
                trajectory = TRAJECTORIES.get(agent_data.request_id)
                return agent_state.TERMINATED if trajectory is not None and trajectory.done else state

        return LlmixAgentLoop

    return _build("LlmixAgentLoop", tool_agent_loop, make)


def _tool_config_path(loop: Any) -> Optional[str]:
    try:
        path = loop.config.actor_rollout_ref.rollout.multi_turn.tool_config_path
    except AttributeError:
        return None
    return str(path) if path else None


def sft_dataset_class() -> type:
    """``LlmixMultiTurnSFTDataset``: a subclass of verl's ``MultiTurnSFTDataset`` for ``verl-sft`` files."""
    base_dataset = _verl("verl.utils.dataset.multiturn_sft_dataset", "MultiTurnSFTDataset")

    def make(base: type) -> type:
        class LlmixMultiTurnSFTDataset(base):  # type: ignore[misc,valid-type]
            """verl's multi-turn SFT dataset over ``llmix export --format verl-sft`` files."""

            def _read_files_and_process(self) -> None:
                super()._read_files_and_process()
                if getattr(self, "tools", None) is not None:
                    self.tools = [sft_tools(t) for t in self.tools]
                if getattr(self, "messages", None) is not None:
                    self.messages = [sft_messages(m) for m in self.messages]

            def _build_messages(self, example: dict):
                example = dict(example)
                example[self.messages_key] = sft_messages(example[self.messages_key])
                return super()._build_messages(example)

        return LlmixMultiTurnSFTDataset

    return _build("LlmixMultiTurnSFTDataset", base_dataset, make)


def register_agent_loop(name: str = AGENT_NAME) -> type:
    """Register ``LlmixAgentLoop`` in this process's verl agent loop registry (``agent_loop.register``);
    the class. In a Ray job, name it in ``agent_loop_config_path`` instead (see docs/verl.md)."""
    register = _verl("verl.experimental.agent_loop.agent_loop", "register")
    cls = agent_loop_class()
    register(name)(cls)
    return cls


_LAZY: Dict[str, Callable[[], type]] = {
    "LlmixTool": tool_class,
    "LlmixInteraction": interaction_class,
    "LlmixAgentLoop": agent_loop_class,
    "LlmixMultiTurnSFTDataset": sft_dataset_class,
}


def __getattr__(name: str) -> Any:
    """``LlmixTool``, ``LlmixInteraction``, ``LlmixAgentLoop`` and ``LlmixMultiTurnSFTDataset`` are built on
    first access (importing verl), so verl's registries can name them as ``llmix_client.verl.<Class>``."""
    factory = _LAZY.get(name)
    if factory is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return factory()
