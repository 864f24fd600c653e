"""Gymnasium adapter: an LLMix environment as a ``gymnasium.Env`` with text spaces.

``LlmixEnv`` holds the logic and needs no gymnasium: ``reset(seed=None, options=None)`` returns
``(observation_text, info)`` and ``step(action)`` the 5-tuple ``(observation_text, reward, terminated,
truncated, info)``. ``make_gym_env(...)`` imports gymnasium (only then) and returns an instance of a real
``gymnasium.Env`` subclass wrapping it, with ``gymnasium.spaces.Text`` observation and action spaces.

Episodes. Each ``reset`` closes the previous episode's session and starts a new one. The task and the
episode seed come from ``options`` (``{"task_id": ..., "seed": ...}``) when given, otherwise from the
adapter's random generator: a task id from ``task_ids`` (or from a pool sampled once from the service
with ``difficulty`` / ``split``) and an episode seed. ``reset(seed=s)`` re-seeds that generator, so a
seeded reset sequence is reproducible.

Actions. An action dict (``{"type": "tool_call", "tool": ..., "args": {...}}`` or ``{"type":
"message", "content": ...}``) or a JSON string of one. A string that is not a JSON object (a model's
malformed output) is sent as ``{"type": "invalid", "raw": text}``, which the environment answers like
any malformed action: an error observation and an ``invalid_call`` reward component, never an
exception. (The service itself refuses a step whose action is not a JSON object, with
``invalid_action``; the adapter wraps such input so that it reaches the environment.)

When a step ends the episode, the session is closed at once (freeing its slot on the service) and the
episode summary (outcome, total reward, verdict) is ``info["episode"]``; a further ``step`` raises
``LifecycleError`` (``episode_ended``) until the next ``reset``.
"""
from __future__ import annotations

import importlib
import json
import random
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .client import Client, LifecycleError, NotFoundError, Session, TaskPool

__all__ = ["LlmixEnv", "make_gym_env", "gym_env_class", "TEXT_CHARSET", "MAX_TEXT_LENGTH"]

#: Characters of the text spaces: printable ASCII, whitespace, Latin-1, general punctuation, currency
#: signs, arrows and box drawing. Spaces describe; the adapter never rejects a text for its characters.
TEXT_CHARSET = "".join(
    [chr(c) for c in range(0x20, 0x7F)]
    + ["\n", "\t", "\r"]
    + [chr(c) for c in range(0xA0, 0x100)]
    + [chr(c) for c in range(0x2010, 0x2070)]
    + [chr(c) for c in range(0x20A0, 0x20C1)]
    + [chr(c) for c in range(0x2190, 0x2200)]
    + [chr(c) for c in range(0x2500, 0x2580)]
)
#: Longest observation or action text the spaces declare.
MAX_TEXT_LENGTH = 1_000_000


class LlmixEnv:
    """A Gymnasium-style view of one LLMix environment (no gymnasium import).

    Args:
        client: the ``Client`` of the service.
        env_id: the environment id, e.g. ``"billing-dispute"``.
        task_ids: the task ids to sample from; when None, a pool of ``task_pool_size`` ids is sampled
            from the service (``difficulty`` / ``split``, seeded with ``seed``) on the first reset.
        difficulty, split: the pool's filter when ``task_ids`` is None.
        seed: the seed of the adapter's generator (task and episode-seed choice).
        record: record every episode to the service's trajectory store.
        policy_checkpoint: recorded with every step.
        task_pool_size: how many task ids the sampled pool holds.
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the last observation text).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, client: Client, env_id: str, task_ids: Optional[Sequence[str]] = None,
                 difficulty: Optional[str] = None, split: Optional[str] = None, seed: int = 0, record: bool = False,
                 policy_checkpoint: Optional[str] = None, task_pool_size: int = 64, render_mode: Optional[str] = None):
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if task_ids is not None and len(task_ids) == 0:
            raise ValueError("task_ids is empty")
        self.client = client
        self.env_id = env_id
        self.difficulty = difficulty
        self.split = split
        self.record = record
        self.policy_checkpoint = policy_checkpoint
        self.task_pool_size = int(task_pool_size)
        self.render_mode = render_mode
        self._tasks = TaskPool(client, env_id, list(task_ids) if task_ids is not None else None, difficulty, split, int(seed), self.task_pool_size)
        self._rng = random.Random(seed)
        self.session: Optional[Session] = None
        self.text = ""
        self.done = False

    # -- the Gymnasium API --

    def reset(self, seed: Optional[int] = None, options: Optional[Mapping[str, Any]] = None) -> Tuple[str, Dict[str, Any]]:
        """Start a new episode; ``(observation_text, info)``. ``info`` holds ``task_id``, ``seed`` (the
        episode seed), ``session_id``, ``env``, ``env_version``, ``tools`` and ``observation`` (the full
        observation dict)."""
        if seed is not None:
            self._rng = random.Random(seed)
        options = dict(options or {})
        task_id = options.get("task_id")
        if task_id is None:
            task_id = self._rng.choice(self._pool())
        episode_seed = options.get("seed")
        if episode_seed is None:
            episode_seed = self._rng.randrange(2**32)
        self._close_session()
        self.session = self.client.create_session(self.env_id, str(task_id), int(episode_seed), record=self.record,
                                                  policy_checkpoint=self.policy_checkpoint)
        self.done = False
        self.text = self.session.text
        return self.text, {
            "task_id": self.session.task_id,
            "seed": self.session.seed,
            "session_id": self.session.session_id,
            "env": self.session.env,
            "env_version": self.session.env_version,
            "tools": self.session.tools,
            "observation": self.session.observation,
        }

    def step(self, action: Any) -> Tuple[str, float, bool, bool, Dict[str, Any]]:
        """Apply one action; ``(observation_text, reward, terminated, truncated, info)``. ``info`` is the
        step's info plus ``reward_components`` and ``tool_result``; on the last step also ``episode`` (the
        summary) and ``outcome`` (the ``task`` component)."""
        if self.done:
            raise LifecycleError("episode_ended", "the episode has ended; call reset() to start a new one")
        if self.session is None:
            raise LifecycleError("episode_not_started", "call reset() before step()")
        result = self.session.step(parse_action(action))
        info = dict(result.info)
        info["reward_components"] = result.reward_components
        info["tool_result"] = result.tool_result
        self.text = result.text
        if result.done:
            self.done = True
            info["outcome"] = float(result.reward_components.get("task", 0.0))
            info["episode"] = self._close_session()
        return self.text, result.reward, result.terminated, result.truncated, info

    def render(self) -> Optional[str]:
        """The last observation text (``render_mode="ansi"``), else None."""
        return self.text if self.render_mode == "ansi" else None

    def close(self) -> None:
        """Close the live session, if any."""
        self._close_session()

    # -- internals --

    def _pool(self) -> List[str]:
        return self._tasks.ids()

    def _close_session(self) -> Optional[Dict[str, Any]]:
        session, self.session = self.session, None
        if session is None or session.closed:
            return session.episode if session is not None else None
        try:
            return session.close()
        except NotFoundError as exc:  # reaped after its idle TTL, or already gone
            if exc.code != "unknown_session":
                raise
            return None


def parse_action(action: Any) -> Dict[str, Any]:
    """The action object of a dict or a JSON string of one. Anything else (text that is not JSON, JSON
    that is not an object, another type) becomes ``{"type": "invalid", "raw": ...}``: the environment
    answers it as an invalid action."""
    if isinstance(action, (bytes, bytearray)):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        try:
            parsed = json.loads(action)
        except ValueError:
            return {"type": "invalid", "raw": action}
        return dict(parsed) if isinstance(parsed, dict) else {"type": "invalid", "raw": action}
    if isinstance(action, Mapping):
        return dict(action)
    try:
        json.dumps(action)
        raw: Any = action
    except (TypeError, ValueError):
        raw = repr(action)
    return {"type": "invalid", "raw": raw}


# gymnasium module id -> (module, class); the module is kept so its id is not reused by another one.
_CLASSES: Dict[int, Tuple[Any, type]] = {}


def gym_env_class() -> type:
    """The ``gymnasium.Env`` subclass wrapping ``LlmixEnv`` (gymnasium is imported here, not before)."""
    gymnasium = importlib.import_module("gymnasium")
    spaces = importlib.import_module("gymnasium.spaces")
    cached = _CLASSES.get(id(gymnasium))
    if cached is not None and cached[0] is gymnasium:
        return cached[1]

    class LlmixGymEnv(gymnasium.Env):  # type: ignore[misc,name-defined]
        """An LLMix environment as a ``gymnasium.Env``: text observations, text (JSON) actions. See
        ``llmix_client.gym.LlmixEnv`` for the arguments."""

        metadata = {"render_modes": ["ansi"]}

        def __init__(self, client: Client, env_id: str, **kwargs: Any):
            super().__init__()
            self.core = LlmixEnv(client, env_id, **kwargs)
            self.render_mode = self.core.render_mode
            self.observation_space = spaces.Text(max_length=MAX_TEXT_LENGTH, min_length=0, charset=TEXT_CHARSET)
            self.action_space = spaces.Text(max_length=MAX_TEXT_LENGTH, min_length=0, charset=TEXT_CHARSET)

        def reset(self, *, seed: Optional[int] = None, options: Optional[Mapping[str, Any]] = None):
            super().reset(seed=seed)
            return self.core.reset(seed=seed, options=options)

        def step(self, action: Any):
            return self.core.step(action)

        def render(self):
            return self.core.render()

        def close(self):
            self.core.close()

        @property
        def session(self) -> Optional[Session]:
            return self.core.session

    _CLASSES[id(gymnasium)] = (gymnasium, LlmixGymEnv)
    return LlmixGymEnv


def make_gym_env(client: Client, env_id: str, **kwargs: Any) -> Any:
    """A ``gymnasium.Env`` for one LLMix environment (imports gymnasium). Keyword arguments are
    ``LlmixEnv``'s: ``task_ids``, ``difficulty``, ``split``, ``seed``, ``record``, ``policy_checkpoint``,
    ``task_pool_size``, ``render_mode``."""
    return gym_env_class()(client, env_id, **kwargs)
