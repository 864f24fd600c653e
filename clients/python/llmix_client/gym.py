"""Gymnasium adapter: an LLMix environment as a ``gymnasium.Env`` with text spaces.

``LlmixEnv`` holds the logic and needs no gymnasium: ``reset(seed=None, options=None)`` returns
``(observation_text, info)`` and ``step(action)`` the 5-tuple ``(observation_text, reward, terminated,
truncated, info)``. ``make_gym_env(...)`` imports gymnasium (only then) and returns an instance of a real
``gymnasium.Env`` subclass wrapping it (``LlmixGymEnv``), with ``gymnasium.spaces.Text`` observation and
action spaces. ``register_envs(...)`` registers the service's environments as Gymnasium ids
(``llmix/billing-dispute-v0``, ...) so that ``gymnasium.make`` builds them with Gymnasium's standard
wrappers (``PassiveEnvChecker``, ``OrderEnforcing``, ``TimeLimit`` at the environment's ``max_steps``).

Episodes. Each ``reset`` closes the previous episode's session and starts a new one. The task and the
episode seed come from ``options`` (``{"task_id": ..., "seed": ...}``) when given, otherwise from the
adapter's random generator: a task id from ``task_ids`` (or from a pool sampled once from the service
with ``difficulty`` / ``split``) and an episode seed. ``reset(seed=s)`` re-seeds that generator, so a
seeded reset sequence is reproducible (Gymnasium's ``check_env`` verifies it).

Actions. An action dict (``{"type": "tool_call", "tool": ..., "args": {...}}`` or ``{"type":
"message", "content": ...}``) or a JSON string of one. A string that is not a JSON object (a model's
malformed output, or a sample of the action space) is sent as ``{"type": "invalid", "raw": text}``,
which the environment answers like any malformed action: an error observation and an ``invalid_call``
reward component, never an exception. (The service itself refuses a step whose action is not a JSON
object, with ``invalid_action``; the adapter wraps such input so that it reaches the environment.)

Spaces. Both are ``Text(min_length=0, charset=TEXT_CHARSET)``. The action space's ``max_length`` is the
longest text whose step request fits the service's request body limit whatever its characters
(``action_text_limit(body_limit)``; ``body_limit`` defaults to ``llmix serve``'s default
``--body-limit``, 1 MiB), so any sample of it is an action the service accepts. Observations are made to
lie in the observation space (``fit_observation``): a character outside ``TEXT_CHARSET`` is written as
its JSON ``\\uXXXX`` escape and a text over ``max_observation_length`` is cut with a marker; the text as
the service rendered it is always ``info["observation"]["rendered"]``.

When a step ends the episode, the session is closed at once (freeing its slot on the service) and the
episode summary (outcome, total reward, verdict, ...) is ``info["llmix_episode"]`` (not ``"episode"``:
that key belongs to Gymnasium's ``RecordEpisodeStatistics``); a further ``step`` raises
``LifecycleError`` (``episode_ended``) until the next ``reset``.
"""
from __future__ import annotations

import copy
import importlib
import json
import math
import random
import re
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .client import Client, LifecycleError, NotFoundError, Session, TaskPool

__all__ = [
    "LlmixEnv",
    "make_gym_env",
    "gym_env_class",
    "register_envs",
    "parse_action",
    "fit_observation",
    "action_text_limit",
    "TEXT_CHARSET",
    "MAX_OBSERVATION_LENGTH",
    "DEFAULT_BODY_LIMIT",
    "EPISODE_INFO_KEY",
    "RENDER_FPS",
    "ENTRY_POINT",
]

# Code point ranges of the text spaces' characters: printable ASCII, tab / newline / carriage return,
# Latin-1, general punctuation, currency signs, arrows and box drawing.
_CHARSET_RANGES: Tuple[Tuple[int, int], ...] = (
    (0x20, 0x7E), (0x0A, 0x0A), (0x09, 0x09), (0x0D, 0x0D), (0xA0, 0xFF),
    (0x2010, 0x206F), (0x20A0, 0x20C0), (0x2190, 0x21FF), (0x2500, 0x257F),
)
#: Characters of the text spaces (every one in the Basic Multilingual Plane). Observations are escaped
#: into it (``fit_observation``); actions are never rejected for their characters.
TEXT_CHARSET = "".join(chr(c) for lo, hi in _CHARSET_RANGES for c in range(lo, hi + 1))
_OUTSIDE_CHARSET = re.compile("[^" + "".join(f"\\u{lo:04x}-\\u{hi:04x}" for lo, hi in _CHARSET_RANGES) + "]")

#: Default ``max_length`` of the observation space (characters). Observations are a few KB; a terminal
#: tool's output may reach 1 MiB per stream.
MAX_OBSERVATION_LENGTH = 4_000_000
#: ``llmix serve``'s default ``--body-limit`` (src/server/app.ts ``DEFAULT_BODY_LIMIT``): 1 MiB.
DEFAULT_BODY_LIMIT = 1024 * 1024
#: The service's smallest ``--body-limit``.
MIN_BODY_LIMIT = 64
#: Bytes one character of ``TEXT_CHARSET`` takes at most in the JSON request: a ``\\uXXXX`` escape (the
#: client writes ASCII JSON; in UTF-8 it would be 3). Re-encoding a text that parses as a JSON object
#: never grows it by more than this factor either.
MAX_BYTES_PER_CHAR = 6
#: Request bytes around the action text: ``{"action":{"type":"invalid","raw":"..."}}`` is 38 of them.
ACTION_REQUEST_OVERHEAD = 64
#: The ``info`` key of the episode summary on the step that ends an episode.
EPISODE_INFO_KEY = "llmix_episode"
#: ``metadata["render_fps"]``: nominal (text rendering has no frame rate); Gymnasium's checker asks for
#: a positive number whenever render modes are declared.
RENDER_FPS = 1
#: The entry point ``register_envs`` registers (resolved by this module's ``__getattr__``).
ENTRY_POINT = "llmix_client.gym:LlmixGymEnv"
#: Appended to an observation cut to fit the observation space.
CUT_MARKER = "\n[observation cut to fit the observation space; the full text is info['observation']['rendered']]"


def _metadata() -> Dict[str, Any]:
    """The environments' ``metadata`` (a fresh dict): ``render_modes`` and ``render_fps``, the keys
    Gymnasium's checkers read."""
    return {"render_modes": ["ansi"], "render_fps": RENDER_FPS}


_OPTION_KEYS = frozenset({"task_id", "seed"})


def action_text_limit(body_limit: int = DEFAULT_BODY_LIMIT) -> int:
    """The longest action text (in characters) whose step request fits ``body_limit`` bytes whatever its
    characters, when its characters are in ``TEXT_CHARSET``: ``(body_limit - 64) // 6``. 174,752 for the
    default 1 MiB. ``ValueError`` for a ``body_limit`` that is not an integer >= 64."""
    if isinstance(body_limit, bool) or not isinstance(body_limit, int) or body_limit < MIN_BODY_LIMIT:
        raise ValueError(f"body_limit must be an integer >= {MIN_BODY_LIMIT} (bytes; llmix serve --body-limit), got {body_limit!r}")
    return max(0, (body_limit - ACTION_REQUEST_OVERHEAD) // MAX_BYTES_PER_CHAR)


def _escape(match: "re.Match[str]") -> str:
    code = ord(match.group(0))
    if code > 0xFFFF:  # a surrogate pair, as JSON writes it
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def fit_observation(text: str, max_length: int = MAX_OBSERVATION_LENGTH) -> str:
    """``text`` made an element of the observation space ``Text(max_length, min_length=0,
    charset=TEXT_CHARSET)``: each character outside ``TEXT_CHARSET`` becomes its JSON escape
    (``"\\u00e9"``-style; a character beyond the BMP its surrogate pair), then a text longer than
    ``max_length`` is cut, ending with ``CUT_MARKER``. A text already in the space is returned as is."""
    if max_length < len(CUT_MARKER):
        raise ValueError(f"max_length must be >= {len(CUT_MARKER)}, got {max_length}")
    if _OUTSIDE_CHARSET.search(text) is not None:
        text = _OUTSIDE_CHARSET.sub(_escape, text)
    if len(text) > max_length:
        text = text[: max_length - len(CUT_MARKER)] + CUT_MARKER
    return text


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

    metadata = _metadata()

    def __init__(self, client: Client, env_id: str, task_ids: Optional[Sequence[str]] = None,
                 difficulty: Optional[str] = None, split: Optional[str] = None, seed: int = 0, record: bool = False,
                 policy_checkpoint: Optional[str] = None, task_pool_size: int = 64, render_mode: Optional[str] = None):
        if not isinstance(client, Client):
            raise TypeError(f"client must be a llmix_client.Client, got {type(client).__name__}")
        if not isinstance(env_id, str) or not env_id:
            raise ValueError(f"env_id must be a non-empty string, got {env_id!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if isinstance(task_ids, str):
            raise TypeError("task_ids must be a sequence of task id strings, not one string")
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
        observation dict). ``options`` may hold ``task_id`` and ``seed`` (the episode's); other keys
        raise ``ValueError``."""
        options = dict(options or {})
        unknown = sorted(set(options) - _OPTION_KEYS)
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; the options are 'task_id' and 'seed'")
        if seed is not None:
            self._rng = random.Random(seed)
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
        step's info plus ``reward_components``, ``tool_result`` and ``observation`` (the full observation
        dict); on the last step also ``llmix_episode`` (the summary) and ``outcome`` (the ``task``
        component)."""
        if self.done:
            raise LifecycleError("episode_ended", "the episode has ended; call reset() to start a new one")
        if self.session is None:
            raise LifecycleError("episode_not_started", "call reset() before step()")
        result = self.session.step(parse_action(action))
        info = dict(result.info)
        info["reward_components"] = result.reward_components
        info["tool_result"] = result.tool_result
        info["observation"] = result.observation
        self.text = result.text
        if result.done:
            self.done = True
            info["outcome"] = float(result.reward_components.get("task", 0.0))
            info[EPISODE_INFO_KEY] = self._close_session()
        return self.text, result.reward, result.terminated, result.truncated, info

    def render(self) -> Optional[str]:
        """The last observation text (``render_mode="ansi"``), else None."""
        return self.text if self.render_mode == "ansi" else None

    def close(self) -> None:
        """Close the live session, if any (closing twice is allowed)."""
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


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def parse_action(action: Any) -> Dict[str, Any]:
    """The action object of a dict or a JSON string of one. Anything else (text that is not strict JSON,
    JSON that is not an object, another type) becomes ``{"type": "invalid", "raw": ...}``: the
    environment answers it as an invalid action. ``NaN``, ``Infinity`` and numbers out of the float range
    are not JSON (the service could not read them back), so text holding them is invalid too."""
    if isinstance(action, (bytes, bytearray)):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        try:
            parsed = json.loads(action, parse_constant=_no_constant, parse_float=_finite_float)
        except (ValueError, RecursionError):
            return {"type": "invalid", "raw": action}
        return dict(parsed) if isinstance(parsed, dict) else {"type": "invalid", "raw": action}
    if isinstance(action, Mapping):
        return dict(action)
    try:
        json.dumps(action, allow_nan=False)
        raw: Any = action
    except (TypeError, ValueError):
        raw = repr(action)
    return {"type": "invalid", "raw": raw}


# -- clients named by URL ------------------------------------------------------------------------------

# base_url -> the Client that environments made from a URL (gymnasium.make, EnvSpec.make) use.
_SHARED_CLIENTS: Dict[str, Client] = {}
_SHARED_LOCK = threading.Lock()


def _share_client(client: Client) -> None:
    with _SHARED_LOCK:
        _SHARED_CLIENTS[client.base_url] = client


def _resolve_client(client: Union[Client, str, None]) -> Tuple[Client, bool]:
    """``(client, owned)``: a Client as given; for a URL (or None: ``$LLMIX_URL`` or the default), the
    client ``register_envs`` shared for it, else a new one (owned: closed with the environment)."""
    if isinstance(client, Client):
        return client, False
    if client is not None and not isinstance(client, str):
        raise TypeError(f"client must be a llmix_client.Client or the service's URL, got {type(client).__name__}")
    fresh = Client(client)  # normalizes the URL; opens no connection
    with _SHARED_LOCK:
        shared = _SHARED_CLIENTS.get(fresh.base_url)
    return (shared, False) if shared is not None else (fresh, True)


# -- the gymnasium.Env ---------------------------------------------------------------------------------

# gymnasium module id -> (module, class); the module is kept so its id is not reused by another one.
_CLASSES: Dict[int, Tuple[Any, type]] = {}
_GYM_KWARGS = frozenset({"max_observation_length", "max_action_length", "body_limit"})
_CORE_KWARGS = frozenset({"task_ids", "difficulty", "split", "seed", "record", "policy_checkpoint", "task_pool_size", "render_mode"})


def _space_lengths(max_observation_length: int, max_action_length: Optional[int], body_limit: int) -> Tuple[int, int]:
    """Validated ``(observation max_length, action max_length)``."""
    limit = action_text_limit(body_limit)
    if max_action_length is None:
        max_action_length = limit
    elif isinstance(max_action_length, bool) or not isinstance(max_action_length, int) or max_action_length < 0:
        raise ValueError(f"max_action_length must be an integer >= 0, got {max_action_length!r}")
    elif max_action_length > limit:
        raise ValueError(
            f"max_action_length={max_action_length} does not fit the service's body limit: a sampled action of that "
            f"many characters may take {MAX_BYTES_PER_CHAR * max_action_length + ACTION_REQUEST_OVERHEAD} bytes, over "
            f"body_limit={body_limit}; the most is {limit} (pass body_limit= to match llmix serve --body-limit)")
    if isinstance(max_observation_length, bool) or not isinstance(max_observation_length, int) or max_observation_length < len(CUT_MARKER):
        raise ValueError(f"max_observation_length must be an integer >= {len(CUT_MARKER)}, got {max_observation_length!r}")
    return max_observation_length, max_action_length


# gymnasium.spaces module id -> (module, LlmixText class), as _CLASSES.
_TEXT_CLASSES: Dict[int, Tuple[Any, type]] = {}


def text_space(max_length: int) -> Any:
    """``gymnasium.spaces.Text(max_length, min_length=0, charset=TEXT_CHARSET)`` whose repr names the
    charset instead of listing its characters (Gymnasium's own repr prints all of them, ~63,000). It is a
    ``Text`` (isinstance, ==, sample, contains are Gymnasium's) and pickles by this function's name."""
    spaces = importlib.import_module("gymnasium.spaces")
    cached = _TEXT_CLASSES.get(id(spaces))
    if cached is None or cached[0] is not spaces:

        class LlmixText(spaces.Text):  # type: ignore[misc,name-defined]
            def __repr__(self) -> str:
                return (f"Text({self.min_length}, {self.max_length}, charset=llmix_client.gym.TEXT_CHARSET "
                        f"({len(TEXT_CHARSET):,} characters))")

            def __reduce__(self) -> Any:
                # A class made inside a function cannot be pickled by reference: rebuild through
                # text_space, then restore the instance's state (its seeded np_random included).
                return (text_space, (self.max_length,), self.__dict__.copy())

        cached = (spaces, LlmixText)
        _TEXT_CLASSES[id(spaces)] = cached
    return cached[1](max_length=max_length, min_length=0, charset=TEXT_CHARSET)


def gym_env_class() -> type:
    """The ``gymnasium.Env`` subclass wrapping ``LlmixEnv`` (gymnasium is imported here, not before). Also
    reachable as ``llmix_client.gym.LlmixGymEnv``, the entry point ``register_envs`` registers."""
    gymnasium = importlib.import_module("gymnasium")
    spaces = importlib.import_module("gymnasium.spaces")
    cached = _CLASSES.get(id(gymnasium))
    if cached is not None and cached[0] is gymnasium:
        return cached[1]

    class LlmixGymEnv(gymnasium.Env):  # type: ignore[misc,name-defined]
        """An LLMix environment as a ``gymnasium.Env``: text observations, text (JSON) actions.

        Args:
            client: a ``Client``, or the service's URL (then the client ``register_envs`` shared for
                that URL, else a new ``Client(url)``: token from ``$LLMIX_TOKEN``; closed by ``close``).
            env_id: the LLMix environment id, e.g. ``"billing-dispute"``.
            max_observation_length: the observation space's ``max_length`` (``fit_observation``).
            max_action_length: the action space's ``max_length``; default and most: the longest text
                whose step request fits ``body_limit`` (``action_text_limit``).
            body_limit: the service's ``--body-limit`` in bytes (default 1 MiB, the service's default).
            Other keyword arguments are ``LlmixEnv``'s: ``task_ids``, ``difficulty``, ``split``, ``seed``,
            ``record``, ``policy_checkpoint``, ``task_pool_size``, ``render_mode``.
        """

        metadata = _metadata()

        def __init__(self, client: Union[Client, str, None] = None, env_id: Optional[str] = None, *,
                     max_observation_length: int = MAX_OBSERVATION_LENGTH, max_action_length: Optional[int] = None,
                     body_limit: int = DEFAULT_BODY_LIMIT, **kwargs: Any):
            super().__init__()
            if env_id is None:
                raise TypeError("env_id is required (an LLMix environment id such as 'billing-dispute')")
            unknown = sorted(set(kwargs) - _CORE_KWARGS)
            if unknown:
                raise TypeError(f"unknown argument(s) {unknown} for {env_id}; see llmix_client.gym.LlmixGymEnv")
            obs_length, action_length = _space_lengths(max_observation_length, max_action_length, body_limit)
            resolved, self._owns_client = _resolve_client(client)
            self.core = LlmixEnv(resolved, env_id, **kwargs)
            self.render_mode = self.core.render_mode
            self.observation_space = text_space(obs_length)
            self.action_space = text_space(action_length)

        # gymnasium.make sets ``env.unwrapped.spec`` to an EnvSpec whose kwargs are what the environment
        # was made with; its wrappers and check_env deep-copy it and EnvSpec.make / to_json re-use it. A
        # Client there (``gymnasium.make(id, client=c)``) cannot be deep-copied: it is replaced by its URL
        # and shared under it, so that re-making the environment from the spec uses the same client.
        _llmix_spec: Any = None

        @property
        def spec(self) -> Any:
            return self._llmix_spec

        @spec.setter
        def spec(self, value: Any) -> None:
            kwargs = getattr(value, "kwargs", None)
            if isinstance(kwargs, dict) and isinstance(kwargs.get("client"), Client):
                _share_client(kwargs["client"])
                value = copy.copy(value)
                value.kwargs = {**kwargs, "client": kwargs["client"].base_url}
            self._llmix_spec = value

        def reset(self, *, seed: Optional[int] = None, options: Optional[Mapping[str, Any]] = None):
            """``(observation, info)``; the observation is ``fit_observation`` of the rendered text."""
            super().reset(seed=seed)
            text, info = self.core.reset(seed=seed, options=options)
            return fit_observation(text, self.observation_space.max_length), info

        def step(self, action: Any):
            """``(observation, reward, terminated, truncated, info)`` (see ``LlmixEnv.step``)."""
            text, reward, terminated, truncated, info = self.core.step(action)
            return fit_observation(text, self.observation_space.max_length), float(reward), bool(terminated), bool(truncated), info

        def render(self) -> Optional[str]:
            return self.core.render()

        def close(self) -> None:
            self.core.close()
            if self._owns_client:
                self.core.client.close()

        @property
        def session(self) -> Optional[Session]:
            """The live session (None between episodes)."""
            return self.core.session

        @property
        def client(self) -> Client:
            return self.core.client

    LlmixGymEnv.__qualname__ = "LlmixGymEnv"  # pickled by reference: llmix_client.gym.LlmixGymEnv
    _CLASSES[id(gymnasium)] = (gymnasium, LlmixGymEnv)
    return LlmixGymEnv


def __getattr__(name: str) -> Any:
    """``llmix_client.gym.LlmixGymEnv``: the gymnasium class (imports gymnasium)."""
    if name == "LlmixGymEnv":
        return gym_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_gym_env(client: Union[Client, str], env_id: str, **kwargs: Any) -> Any:
    """A ``gymnasium.Env`` for one LLMix environment (imports gymnasium), without Gymnasium's
    registration and wrappers (``register_envs`` + ``gymnasium.make`` gives those). Keyword arguments
    are ``LlmixGymEnv``'s: ``task_ids``, ``difficulty``, ``split``, ``seed``, ``record``,
    ``policy_checkpoint``, ``task_pool_size``, ``render_mode``, ``max_observation_length``,
    ``max_action_length``, ``body_limit``."""
    return gym_env_class()(client, env_id, **kwargs)


def register_envs(client: Union[Client, str, None] = None, env_ids: Optional[Sequence[str]] = None, *,
                  namespace: str = "llmix", version: int = 0, **env_kwargs: Any) -> List[str]:
    """Register LLMix environments as Gymnasium ids; the ids registered, e.g.
    ``["llmix/billing-dispute-v0", ...]``. Imports gymnasium and asks the service for its environments.

    Each id is registered with ``entry_point="llmix_client.gym:LlmixGymEnv"``, ``max_episode_steps`` the
    environment's ``max_steps`` (so ``gymnasium.make`` adds ``TimeLimit`` at the environment's own
    budget), ``nondeterministic=False`` (an episode is determined by its task, seed and actions) and
    ``kwargs={"client": <the service's URL>, "env_id": ..., **env_kwargs}``: plain values, so ``env.spec``
    can be deep-copied, pickled and written with ``EnvSpec.to_json``. The client is not stored in the
    spec (nor its token): it is shared under its URL, and environments made from that URL in this process
    use it; elsewhere (another process) a new ``Client(url)`` reads ``$LLMIX_TOKEN``.

    Args:
        client: a ``Client``, or the service's URL (or None: ``$LLMIX_URL`` or the default).
        env_ids: the LLMix environment ids; default every environment the service runs. An id the
            service does not run raises ``NotFoundError`` (``unknown_env``).
        namespace, version: the Gymnasium id is ``f"{namespace}/{env_id}-v{version}"``.
        env_kwargs: defaults of every registered environment (``LlmixGymEnv``'s keyword arguments, e.g.
            ``difficulty="easy", split="train"``); ``gymnasium.make(id, **kw)`` overrides them.
    """
    gymnasium = importlib.import_module("gymnasium")
    unknown = sorted(set(env_kwargs) - _CORE_KWARGS - _GYM_KWARGS)
    if unknown:
        raise TypeError(f"unknown argument(s) {unknown}; the environment arguments are {sorted(_CORE_KWARGS | _GYM_KWARGS)}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be an integer >= 0, got {version!r}")
    if not isinstance(namespace, str) or not re.fullmatch(r"[\w:-]+", namespace):
        raise ValueError(f"namespace must be a non-empty string of letters, digits, '_', ':' or '-', got {namespace!r}")
    _space_lengths(env_kwargs.get("max_observation_length", MAX_OBSERVATION_LENGTH), env_kwargs.get("max_action_length"),
                   env_kwargs.get("body_limit", DEFAULT_BODY_LIMIT))
    try:
        json.dumps(env_kwargs, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the environment arguments must be JSON values (they are stored in the EnvSpec): {exc}") from None
    resolved, _ = _resolve_client(client)
    _share_client(resolved)
    if env_ids is None:
        envs = resolved.envs()
    else:
        if isinstance(env_ids, str):
            raise TypeError("env_ids must be a sequence of environment ids, not one string")
        envs = [resolved.env(env_id) for env_id in env_ids]  # NotFoundError (unknown_env) for an unknown id
    registered: List[str] = []
    for env in envs:
        gym_id = f"{namespace}/{env['id']}-v{version}"
        max_steps = env.get("max_steps")
        gymnasium.register(
            id=gym_id,
            entry_point=ENTRY_POINT,
            max_episode_steps=int(max_steps) if isinstance(max_steps, int) and max_steps > 0 else None,
            nondeterministic=False,
            kwargs={"client": resolved.base_url, "env_id": env["id"], **copy.deepcopy(env_kwargs)},
        )
        registered.append(gym_id)
    return registered
