"""TRL adapter: an ``environment_factory`` class for ``trl.GRPOTrainer``.

Read from TRL's source (``trl/trainer/grpo_trainer.py``, ``GRPOTrainer.__init__``,
``_generate_and_score_completions`` and ``_calculate_rewards``) at huggingface/trl ``f2cd577`` (main after
v1.9.0, 2026-07-24), ``v1.8.0`` (``95809b9``) and ``v1.7.1`` (``f279c23``). ``environment_factory`` first
shipped in v0.29.0; the environment-owned reward came with ``cfef01a`` ("Environment-owned reward",
#6238), first released in v1.8.0. The two contracts:

- TRL 0.29 .. 1.7: the trainer instantiates the class with no arguments, one instance per rollout slot,
  and lists every public bound method (``inspect.getmembers(instance, inspect.ismethod)``) except
  ``reset`` as a tool. Rewards come only from ``reward_funcs`` (required), which receive the instances
  as ``environments``.
- TRL >= 1.8: same, except that a method named ``get_reward`` is reserved: it is not a tool, and when the
  class has one the trainer appends a reward function calling ``env.get_reward()`` (no arguments,
  returning a float) for every rollout whose environment is exactly that class, with weight 1 (not
  covered by ``GRPOConfig.reward_weights``), logged as ``rewards/<ClassName>/mean``. ``reward_funcs``
  becomes optional; any that are given are added to it, so a reward function returning the same outcome
  counts it twice.

In both, before each rollout the trainer calls ``reset(**row)`` with the dataset row's columns and appends
the returned string to the prompt's last message (``None``: nothing appended); a tool's JSON schema is
built from the method's type hints and Google-style docstring; an exception raised by a tool is fed back
to the model as the tool's response; instances are reused across rollouts.

``environment_factory(client, env_id, ...)`` reads the environment's tools from the service
(``GET /v1/envs/:env``) and builds such a class:

- ``reset(**kwargs)``: closes the previous episode's session and starts a new one. ``task_id`` and
  ``seed`` come from the row (the ``trl-grpo`` export writes ``env``, ``task_id``, ``seed``,
  ``difficulty``, ``env_version`` and ``prompt``); a row without ``task_id`` draws one from
  ``task_ids`` or from a pool sampled from the service (note: then the instances of one GRPO group do
  not share a task), a row without ``seed`` uses the factory's ``seed``. Returns the first observation
  text, the prompt, except when the row's ``prompt`` already ends with exactly that text (the
  ``trl-grpo`` export's rows do): then ``None``, so TRL does not append it a second time.
- one public method per environment tool, named as the tool, with keyword-only parameters typed from
  the JSON Schema (string->str, integer->int, number->float, boolean->bool, array->list, object->dict,
  nullable->Optional[...]), a ``__signature__``, ``__annotations__`` and a Google-style docstring built
  from the schema's descriptions. Calling it steps the session with a ``tool_call`` and returns the
  observation text. A nullable parameter defaults to None (sent as null); an optional one that is not
  passed is left out.
- ``send_message(content)``: the ``message`` action (talk to the simulated user, or give a final
  answer). TRL ends a rollout when the model answers without a tool call, and that final text never
  reaches the environment, so the conversation with the user has to go through this tool.
- the outcome: the final step's ``task`` reward component (0..1), 0.0 while the episode has not ended (a
  rollout cut off by ``max_completion_length`` or by the end of the model's turn scores 0.0). It is the
  ``reward`` attribute in every class, and where the outcome goes depends on ``owns_reward``:

  - ``owns_reward=True`` (TRL >= 1.8): the class has ``get_reward()``, so the trainer itself adds the
    outcome as a reward (weight 1) and does not list ``get_reward`` as a tool. Pass no reward function
    for the outcome; ``outcome_reward`` refuses such classes (``RewardConfigError``).
  - ``owns_reward=False`` (TRL <= 1.7, or TRL >= 1.8 when the outcome should be weighted with
    ``reward_weights``): the class has no ``get_reward`` (on TRL <= 1.7 it would be listed as a tool);
    pass ``reward_funcs=outcome_reward``.
  - ``owns_reward=None`` (default): ``env_owns_reward()``, i.e. True unless the installed TRL is older
    than 1.8.

  The class attribute ``owns_reward`` tells which was built.

When a step ends the episode the session is closed at once (its slot on the service is freed) and the
summary (outcome, total reward, verdict, ...) is the ``episode`` attribute; a later tool call raises
``ValueError`` ("the episode has ended"), which TRL shows the model. Public data attributes: ``reward``,
``done``, ``episode``, ``session_id``, ``task_id``, ``seed``. A tool whose name is one of
``RESERVED_NAMES`` (``get_reward`` included, whatever ``owns_reward``: TRL >= 1.8 never exposes a tool
by that name) or is not a Python identifier makes the factory raise ``ValueError``.
"""
from __future__ import annotations

import inspect
import keyword
import random
import re
import threading
from importlib import metadata
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .client import Client, LlmixError, NotFoundError, Session, StepResult, TaskPool

__all__ = ["environment_factory", "outcome_reward", "env_owns_reward", "installed_trl_version", "RewardConfigError",
           "python_type", "tool_method", "close_all", "RESERVED_NAMES", "ENV_REWARD_SINCE"]

_SIMPLE = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict, "null": type(None)}

#: Names an environment tool may not have (the class's own public members, and TRL's reserved methods).
RESERVED_NAMES = frozenset({"reset", "get_reward", "send_message", "reward", "done", "episode", "session_id", "task_id",
                            "seed", "owns_reward"})

#: The first TRL release whose GRPOTrainer takes an environment's ``get_reward`` as a reward (weight 1) and
#: does not list it as a tool (huggingface/trl cfef01a, #6238, released in v1.8.0).
ENV_REWARD_SINCE = (1, 8)


class RewardConfigError(ValueError):
    """The reward configuration would count the outcome twice (or not at all): raised by ``outcome_reward``
    for an environment class whose ``get_reward`` the trainer already adds as a reward."""


# ----- TRL versions -------------------------------------------------------------------------------------


def installed_trl_version() -> Optional[str]:
    """The version string of the installed ``trl`` distribution, or None when it is not installed (TRL is
    not imported)."""
    try:
        return metadata.version("trl")
    except metadata.PackageNotFoundError:
        return None


def env_owns_reward(trl_version: Optional[str] = None) -> bool:
    """Whether a TRL version's GRPOTrainer takes an environment's ``get_reward()`` as a reward (TRL >= 1.8,
    ``ENV_REWARD_SINCE``) rather than listing it as a tool (0.29 .. 1.7).

    Args:
        trl_version: a version string such as ``"1.7.1"`` or ``"1.10.0.dev0"``; None: the installed TRL's
            (``installed_trl_version()``), and True when TRL is not installed (the current contract).

    Raises:
        ValueError: the version string does not start with ``MAJOR.MINOR``.
    """
    version = installed_trl_version() if trl_version is None else trl_version
    if version is None:
        return True
    match = re.match(r"\s*v?(\d+)\.(\d+)", str(version))
    if not match:
        raise ValueError(f"not a TRL version: {version!r} (expected MAJOR.MINOR[.PATCH...])")
    return (int(match.group(1)), int(match.group(2))) >= ENV_REWARD_SINCE


# ----- JSON Schema -> Python ----------------------------------------------------------------------------


def python_type(schema: Any) -> Tuple[Any, bool]:
    """The Python type hint of a JSON Schema, and whether the schema admits null. ``anyOf``/``oneOf``
    with a null branch and ``"type": [..., "null"]`` are nullable; several non-null types make a
    ``Union``; an array with typed items is ``List[item]``; no type information gives ``Any``."""
    if not isinstance(schema, Mapping):
        return Any, False
    branches = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else schema.get("oneOf")
    if isinstance(branches, list):
        types: List[Any] = []
        nullable = False
        for branch in branches:
            hint, branch_null = python_type(branch)
            if hint is type(None):
                nullable = True
                continue
            nullable = nullable or branch_null
            if hint not in types:
                types.append(hint)
        return _union(types), nullable
    declared = schema.get("type")
    if isinstance(declared, list):
        nullable = "null" in declared
        types = []
        for name in declared:
            if name == "null":
                continue
            hint = _scalar(name, schema)
            if hint not in types:
                types.append(hint)
        if not types:
            return type(None), True
        return _union(types), nullable
    if isinstance(declared, str):
        if declared == "null":
            return type(None), True
        return _scalar(declared, schema), False
    for key in ("const", "enum"):
        if key in schema:
            values = [schema[key]] if key == "const" else list(schema[key] or [])
            kinds: List[Any] = []
            nullable = False
            for value in values:
                if value is None:
                    nullable = True
                    continue
                kind = float if isinstance(value, float) else type(value)
                if kind not in kinds:
                    kinds.append(kind)
            return _union(kinds), nullable
    return Any, False


def _scalar(name: str, schema: Mapping[str, Any]) -> Any:
    if name == "array":
        items = schema.get("items")
        if isinstance(items, Mapping) and items:
            hint, nullable = python_type(items)
            if hint is not Any:
                return List[Optional[hint]] if nullable else List[hint]  # type: ignore[valid-type]
        return list
    return _SIMPLE.get(name, Any)


def _union(types: List[Any]) -> Any:
    if not types:
        return Any
    if len(types) == 1:
        return types[0]
    if Any in types:
        return Any
    return Union[tuple(types)]


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _description(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return ""
    if schema.get("description"):
        return _one_line(schema["description"])
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            if isinstance(branch, Mapping) and branch.get("description"):
                return _one_line(branch["description"])
    return ""


def _identifier(name: str) -> str:
    ident = re.sub(r"\W", "_", name)
    if not ident or ident[0].isdigit():
        ident = f"_{ident}"
    if keyword.iskeyword(ident) or ident == "self":
        ident = f"{ident}_"
    return ident


# ----- tool methods -------------------------------------------------------------------------------------


def tool_method(tool: Mapping[str, Any]) -> Any:
    """The method for one tool definition ``{name, description, parameters}``: keyword-only typed
    parameters, a ``__signature__`` (with ``self``), ``__annotations__`` and a Google-style docstring.
    Calling it on an environment instance steps its session with the tool call; the observation text."""
    name = tool["name"]
    schema = tool.get("parameters") or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: Dict[str, Any] = {}
    to_json: Dict[str, str] = {}
    send_null: List[str] = []  # required nullable parameters: not passed -> null
    arg_docs: List[str] = []
    for json_name, prop in properties.items():
        ident = _identifier(json_name)
        if ident in to_json:
            raise ValueError(f"tool {name}: parameters {to_json[ident]!r} and {json_name!r} map to the same Python name {ident!r}")
        to_json[ident] = json_name
        hint, nullable = python_type(prop)
        is_required = json_name in required
        if nullable or not is_required:
            hint = Optional[hint] if hint is not Any else Any
            default: Any = None
            if nullable and is_required:
                send_null.append(ident)
        else:
            default = inspect.Parameter.empty
        params.append(inspect.Parameter(ident, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
        annotations[ident] = hint
        arg_docs.append(f"    {ident}: {_description(prop) or f'The {json_name} argument.'}")
    annotations["return"] = str
    signature = inspect.Signature(params, return_annotation=str)
    call_signature = signature.replace(parameters=params[1:])

    def method(self: Any, *args: Any, **kwargs: Any) -> str:
        if args:
            raise TypeError(f"{name}() takes keyword arguments only")
        passed = call_signature.bind(**kwargs).arguments  # TypeError for an unknown or missing argument
        call_args = {to_json[ident]: value for ident, value in passed.items()}
        for ident in send_null:
            call_args.setdefault(to_json[ident], None)
        return self._call_tool(name, call_args)

    description = _one_line(tool.get("description") or "") or f"Call the {name} tool."
    doc = description
    if arg_docs:
        doc += "\n\nArgs:\n" + "\n".join(arg_docs)
    doc += "\n\nReturns:\n    The tool's result as text."
    method.__name__ = name
    method.__qualname__ = name
    method.__doc__ = doc
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method


# ----- the environment class ------------------------------------------------------------------------------


class _LlmixToolEnv:
    """Base of the classes ``environment_factory`` builds (see the module docstring). Without ``get_reward``:
    the class of ``owns_reward=False``, whose outcome ``outcome_reward`` reads."""

    #: Whether the class has ``get_reward``, which TRL >= 1.8 adds as a reward of its own.
    owns_reward: bool = False
    _client: Client
    _env_id: str
    _default_seed: int = 0
    _record: bool = False
    _policy_checkpoint: Optional[str] = None
    _dedupe_prompt: bool = True
    _sampler: "_TaskSampler"

    def __init__(self) -> None:
        self._session: Optional[Session] = None
        self._first_text = ""
        self.reward = 0.0
        self.done = False
        self.episode: Optional[Dict[str, Any]] = None
        self.session_id: Optional[str] = None
        self.task_id: Optional[str] = None
        self.seed: Optional[int] = None

    def reset(self, **kwargs: Any) -> Optional[str]:
        """Start a new episode (closing the previous one). ``task_id`` and ``seed`` come from the dataset
        row when it has them. Returns the first observation text (the prompt), or None when the row's
        ``prompt`` already ends with it."""
        env = kwargs.get("env")
        if env is not None and env != self._env_id:
            raise ValueError(f"this environment class runs {self._env_id!r}; the row is for {env!r}")
        self._close()
        task_id = kwargs.get("task_id")
        seed = kwargs.get("seed")
        if task_id is None:
            task_id, drawn_seed = self._sampler.draw()
            if seed is None:
                seed = drawn_seed
        if seed is None:
            seed = self._default_seed
        session = self._client.create_session(self._env_id, str(task_id), int(seed), record=self._record,
                                              policy_checkpoint=self._policy_checkpoint)
        self._session = session
        self.reward = 0.0
        self.done = False
        self.episode = None
        self.session_id = session.session_id
        self.task_id = session.task_id
        self.seed = session.seed
        text = session.text
        if self._dedupe_prompt and _prompt_ends_with(kwargs.get("prompt"), text):
            return None
        return text

    def send_message(self, content: str) -> str:
        """Send a message to the user you are talking to (they see only your messages, never tool output), or give your final answer.

        Args:
            content: The text of the message.

        Returns:
            The user's reply or the environment's response, as text.
        """
        return self._step({"type": "message", "content": content})

    # -- internals (private: TRL exposes only public methods as tools) --

    def _call_tool(self, name: str, args: Dict[str, Any]) -> str:
        return self._step({"type": "tool_call", "tool": name, "args": args})

    def _step(self, action: Dict[str, Any]) -> str:
        if self.done:
            raise ValueError("The episode has ended; no more actions are accepted.")
        if self._session is None:
            raise ValueError("No episode is running: reset() was not called.")
        result: StepResult = self._session.step(action)
        if result.done:
            self.done = True
            self.reward = float(result.reward_components.get("task", 0.0))
            self.episode = self._close()
        return result.text

    def _close(self) -> Optional[Dict[str, Any]]:
        session, self._session = self._session, None
        if session is None or session.closed:
            return None
        try:
            return session.close()
        except NotFoundError as exc:
            if exc.code != "unknown_session":
                raise
            return None


class _LlmixRewardEnv(_LlmixToolEnv):
    """The class of ``owns_reward=True``: ``get_reward`` is TRL's environment-owned reward hook (TRL >= 1.8)."""

    owns_reward = True

    def get_reward(self) -> float:
        """The outcome of the episode so far.

        Returns:
            The final step's task reward component (0.0 to 1.0), or 0.0 while the episode has not ended.
        """
        return float(self.reward) if self.done else 0.0


def outcome_reward(environments: Optional[Sequence[Any]] = None, **kwargs: Any) -> List[Optional[float]]:
    """A GRPOTrainer reward function: each rollout's outcome, read from its environment instance.

    For classes built with ``owns_reward=False``: ``GRPOTrainer(reward_funcs=outcome_reward, ...)`` (TRL <=
    1.7 needs it; on TRL >= 1.8 it lets ``GRPOConfig.reward_weights`` weight the outcome). The outcome is the
    final step's ``task`` component (0..1), 0.0 for a rollout whose episode has not ended. An instance that
    is not an LLMix environment (another environment of a multi-environment run) gets None, which TRL
    ignores for that rollout.

    Args:
        environments: the instances, one per completion (GRPOTrainer passes them when
            ``environment_factory`` is set); other keyword arguments are ignored.

    Raises:
        TypeError: ``environments`` is missing (no ``environment_factory``).
        RewardConfigError: an instance's class owns its reward (``owns_reward=True``): TRL >= 1.8 already
            adds its ``get_reward``, so this function would count the outcome twice.
    """
    if environments is None:
        raise TypeError("outcome_reward needs the environments keyword argument: use it with GRPOTrainer(environment_factory=...)")
    rewards: List[Optional[float]] = []
    for env in environments:
        if not isinstance(env, _LlmixToolEnv):
            rewards.append(None)
            continue
        if type(env).owns_reward:
            raise RewardConfigError(
                f"{type(env).__name__} owns its reward: TRL >= 1.8 already adds its get_reward() as a reward (weight 1), "
                "so outcome_reward would count the outcome twice. Either drop outcome_reward from reward_funcs, or build "
                "the class with environment_factory(..., owns_reward=False) (required on TRL <= 1.7)."
            )
        rewards.append(float(env.reward) if env.done else 0.0)
    return rewards


def _prompt_ends_with(prompt: Any, text: str) -> bool:
    if not text:
        return False
    if isinstance(prompt, str):
        return prompt.endswith(text)
    if isinstance(prompt, (list, tuple)) and prompt:
        last = prompt[-1]
        content = last.get("content") if isinstance(last, Mapping) else None
        return isinstance(content, str) and content.endswith(text)
    return False


class _TaskSampler:
    """Task ids (and episode seeds) for rows without a task_id: shared by every instance of a class."""

    def __init__(self, client: Client, env_id: str, task_ids: Optional[Sequence[str]], difficulty: Optional[str],
                 split: Optional[str], seed: int, pool_size: int):
        self._tasks = TaskPool(client, env_id, list(task_ids) if task_ids is not None else None, difficulty, split, seed, pool_size)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self) -> Tuple[str, int]:
        task_ids = self._tasks.ids()
        with self._lock:
            return self._rng.choice(task_ids), self._rng.randrange(2**32)


def environment_factory(client: Client, env_id: str, task_ids: Optional[Sequence[str]] = None,
                        difficulty: Optional[str] = None, split: Optional[str] = None, seed: int = 0,
                        record: bool = False, policy_checkpoint: Optional[str] = None, task_pool_size: int = 64,
                        dedupe_prompt: bool = True, class_name: Optional[str] = None,
                        owns_reward: Optional[bool] = None) -> type:
    """Build the class to pass as ``GRPOTrainer(environment_factory=...)`` for one environment.

    Args:
        client: the ``Client`` of the service (shared by every instance; it is thread-safe).
        env_id: the environment id, e.g. ``"billing-dispute"``.
        task_ids: task ids for rows without a ``task_id``; when None, a pool sampled from the service.
        difficulty, split: the sampled pool's filter.
        seed: the episode seed for rows without ``seed``; also seeds the task sampler.
        record: record every episode to the service's trajectory store.
        policy_checkpoint: recorded with every step.
        task_pool_size: size of the sampled pool.
        dedupe_prompt: return None from ``reset`` when the row's prompt already ends with the first
            observation (the ``trl-grpo`` export's rows), so it is not appended twice.
        class_name: the class's name (default from the env id, e.g. ``BillingDisputeEnv``). TRL >= 1.8
            logs the environment-owned reward under it (``rewards/BillingDisputeEnv/mean``).
        owns_reward: True: the class has ``get_reward()``, which TRL >= 1.8 adds as a reward (weight 1);
            pass no reward function for the outcome. False: no ``get_reward`` (TRL <= 1.7 would list it as
            a tool); pass ``reward_funcs=outcome_reward``. None: ``env_owns_reward()`` (True unless the
            installed TRL is older than 1.8).

    Returns:
        A class whose instances TRL drives (see the module docstring).

    Raises:
        ValueError: a tool name is not a public Python identifier or collides with a member of the class;
            the installed TRL's version cannot be read (only when ``owns_reward`` is None).
        TypeError: ``owns_reward`` is not None or a bool.
    """
    if owns_reward is not None and not isinstance(owns_reward, bool):
        raise TypeError(f"owns_reward must be None, True or False, not {owns_reward!r}")
    owns = env_owns_reward() if owns_reward is None else owns_reward
    spec = client.env(env_id)
    tools = list(spec.get("tools") or [])
    namespace: Dict[str, Any] = {
        "_client": client,
        "_env_id": env_id,
        "_default_seed": int(seed),
        "_record": bool(record),
        "_policy_checkpoint": policy_checkpoint,
        "_dedupe_prompt": bool(dedupe_prompt),
        "_sampler": _TaskSampler(client, env_id, task_ids, difficulty, split, int(seed), int(task_pool_size)),
        "tool_specs": tools,
        "env_id": env_id,
        "env_version": spec.get("version"),
    }
    reserved = RESERVED_NAMES | {"tool_specs", "env_id", "env_version"}
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise ValueError(f"tool name {name!r} of {env_id} is not a public Python identifier; it cannot be a method")
        if name in reserved or name in namespace:
            raise ValueError(f"tool name {name!r} of {env_id} collides with a member of the environment class")
        namespace[name] = tool_method(tool)
    name = class_name or "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", env_id) if part) + "Env"
    if not name.isidentifier():
        name = f"Env{name}"
    cls = type(name, (_LlmixRewardEnv if owns else _LlmixToolEnv,), namespace)
    cls.__doc__ = f"{spec.get('description') or env_id} (LLMix environment {env_id} {spec.get('version', '')}, served by {client.base_url})."
    cls.__module__ = __name__
    return cls


def close_all(environments: Sequence[Any]) -> None:
    """Close the live sessions of environment instances (e.g. ``trainer.environments`` after training);
    errors are ignored (the service reaps idle sessions anyway)."""
    for env in environments:
        try:
            env._close()
        except (LlmixError, AttributeError):
            pass
