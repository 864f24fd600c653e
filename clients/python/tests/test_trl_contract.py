"""The TRL adapter under stand-ins of GRPOTrainer's two ``environment_factory`` contracts, against a real
``llmix serve`` (trl cannot be installed here).

The stand-ins keep, line for line, what GRPOTrainer does with an environment class and its rewards, and
nothing else (no model, no tokenizer: the "model" replays the oracle's actions as tool calls):

- ``Trl17Trainer``: huggingface/trl v1.7.1 (f279c2342c3c), ``trl/trainer/grpo_trainer.py``:
  ``GRPOTrainer.__init__`` ("Create the environments and extract their methods to be used as tools"),
  ``_generate_and_score_completions`` (``environment.reset(**reset_kwargs)``), the tool-calling loop
  (``sync_tool_dict[name](**function["arguments"])``) and ``_calculate_rewards``.
- ``Trl18Trainer``: huggingface/trl f2cd57710ae3 (main after v1.9.0; v1.8.0 95809b942eb5 is the same in
  these parts), the same functions after cfef01a ("Environment-owned reward", #6238): ``get_reward`` is
  reserved, never a tool, and becomes a reward function of weight 1 named after the class.
"""
from __future__ import annotations

import copy
import inspect
import math
import os
import sys
import unittest
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_support, however the tests are run
from test_support import ENV, REFERENCE_TASK, ServerTestCase

from llmix_client import trl as llmix_trl
from llmix_client.trl import RewardConfigError, close_all, env_owns_reward, environment_factory, outcome_reward

NAN = float("nan")


def _callable_name(func: Callable[..., Any]) -> str:
    """``trl.trainer.utils.get_callable_name``: a function's ``__name__``."""
    return getattr(func, "__name__", type(func).__name__)


def _run_tool_call(sync_tool_dict: Dict[str, Callable[..., Any]], tool_call: Dict[str, Any]) -> Tuple[str, Any]:
    """The tool-calling loop of ``GRPOTrainer._generate_and_score_completions`` (the same in v1.7.1 and
    f2cd577): look the name up in the rollout's tool dict, call it with the parsed arguments; an exception
    becomes ``{"error": str(e)}``, the tool's response."""
    if tool_call["type"] != "function":
        return tool_call.get("name", "unknown"), {"error": f"Unsupported tool call type: {tool_call['type']}"}
    function = tool_call["function"]
    name = function["name"]
    try:
        if name in sync_tool_dict:
            return name, sync_tool_dict[name](**function["arguments"])
        raise ValueError(f"Tool {name} not found.")
    except Exception as e:  # noqa: BLE001 - upstream catches everything
        return name, {"error": str(e)}


def _reward_columns(reward_funcs: Sequence[Callable[..., Any]], inputs: List[Dict[str, Any]], prompts: List[Any],
                    environments: Optional[List[Any]]) -> List[List[float]]:
    """``GRPOTrainer._calculate_rewards`` for synchronous reward functions: the row's columns other than
    ``prompt``/``completion``/``completion_ids`` as keyword lists, ``environments`` when set, None -> NaN."""
    keys = [key for key in inputs[0] if key not in ("prompt", "completion", "completion_ids")]
    reward_kwargs: Dict[str, Any] = {key: [example[key] for example in inputs] for key in keys}
    if environments is not None:
        reward_kwargs["environments"] = environments
    completions = [[{"role": "assistant", "content": ""}] for _ in inputs]
    columns = []
    for reward_func in reward_funcs:
        output = reward_func(prompts=prompts, completions=completions, completion_ids=[[] for _ in inputs], **reward_kwargs)
        columns.append([NAN if r is None else float(r) for r in output])
    return columns


def _weighted_nansum(columns: List[List[float]], weights: List[float]) -> List[float]:
    """``(rewards_per_func * self.reward_weights.unsqueeze(0)).nansum(dim=1)``."""
    rows = len(columns[0]) if columns else 0
    return [sum(w * col[i] for col, w in zip(columns, weights) if not math.isnan(col[i])) for i in range(rows)]


def _public_methods(instance: Any) -> List[Tuple[str, Any]]:
    return inspect.getmembers(instance, predicate=inspect.ismethod)


class Trl17Trainer:
    """GRPOTrainer v1.7.1 (f279c23), as far as environments and rewards go."""

    def __init__(self, reward_funcs: Union[Callable[..., Any], List[Callable[..., Any]]], environment_factory: Callable[[], Any],
                 generation_batch_size: int, reward_weights: Optional[List[float]] = None):
        # "Reward functions": reward_funcs is a required argument in v1.7.1.
        self.reward_funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
        self.reward_func_names = [_callable_name(f) for f in self.reward_funcs]
        if reward_weights is not None and len(reward_weights) != len(self.reward_funcs):
            raise ValueError("Number of reward weights must match number of reward functions")
        self.reward_weights = list(reward_weights) if reward_weights is not None else [1.0] * len(self.reward_funcs)
        # "Create the environments and extract their methods to be used as tools. We create one environment per rollout"
        self.environments = [environment_factory() for _ in range(generation_batch_size)]
        environment_methods: List[List[Any]] = [[] for _ in range(generation_batch_size)]
        for i, environment in enumerate(self.environments):
            has_reset = False
            for name, member in _public_methods(environment):
                if name == "reset":
                    has_reset = True
                elif not name.startswith("_"):
                    environment_methods[i].append(member)
            if not has_reset:
                raise ValueError("Each environment instance returned by `environment_factory` must define a callable `reset` ")
        self._sync_tool_dicts = [{tool.__name__: tool for tool in environment_methods[i]} for i in range(generation_batch_size)]
        self.tools = environment_methods[0]

    def start_rollouts(self, inputs: List[Dict[str, Any]]) -> List[Any]:
        """``_generate_and_score_completions`` up to generation: reset each environment with its row and
        append the returned string to the prompt's last message."""
        prompts = [copy.deepcopy(x["prompt"]) for x in inputs]
        for prompt, environment, reset_kwargs in zip(prompts, self.environments, inputs):
            observation = environment.reset(**reset_kwargs)
            if observation is None:
                continue
            prompt[-1]["content"] += observation
        return prompts

    def call_tool(self, index: int, tool_call: Dict[str, Any]) -> Tuple[str, Any]:
        return _run_tool_call(self._sync_tool_dicts[index], tool_call)

    def rewards(self, inputs: List[Dict[str, Any]], prompts: List[Any]) -> Tuple[Dict[str, List[float]], List[float]]:
        """Each reward function's column (by name) and the weighted total per rollout."""
        columns = _reward_columns(self.reward_funcs, inputs, prompts, self.environments)
        return dict(zip(self.reward_func_names, columns)), _weighted_nansum(columns, self.reward_weights)


class Trl18Trainer:
    """GRPOTrainer f2cd577 (>= v1.8.0), as far as environments and rewards go: a single factory or a dict
    of them, instances pooled and reused, ``get_reward`` owned by the environment."""

    def __init__(self, environment_factory: Union[Callable[[], Any], Dict[str, Callable[[], Any]]],
                 reward_funcs: Union[None, Callable[..., Any], List[Callable[..., Any]]] = None,
                 reward_weights: Optional[List[float]] = None):
        # "Reward functions": optional since v1.8.0.
        if reward_funcs is None:
            reward_funcs = []
        elif not isinstance(reward_funcs, list):
            reward_funcs = [reward_funcs]
        self.reward_funcs = list(reward_funcs)
        self.reward_func_names = [_callable_name(f) for f in self.reward_funcs]
        # "Reward weights": they cover the reward_funcs given, not the environments' rewards.
        if reward_weights is not None and len(reward_weights) != len(self.reward_funcs):
            raise ValueError(f"Number of reward weights ({len(reward_weights)}) must match number of reward functions ({len(self.reward_funcs)})")
        self.reward_weights = list(reward_weights) if reward_weights is not None else [1.0] * len(self.reward_funcs)
        self._multi_environment = isinstance(environment_factory, dict)
        self.environment_factories = environment_factory if self._multi_environment else {None: environment_factory}
        # "Set up the environments and extract their methods to be used as tools": probe one instance each.
        self._env_tools: Dict[Any, List[Any]] = {}
        self._environment_pool: Dict[Any, List[Any]] = {}
        self.tools: List[Any] = []
        env_reward_types: List[type] = []
        for name, factory in self.environment_factories.items():
            instance = factory()
            has_reset = False
            has_reward = False
            methods = []
            for member_name, member in _public_methods(instance):
                if member_name == "reset":
                    has_reset = True
                elif member_name == "get_reward":
                    has_reward = True
                elif not member_name.startswith("_"):
                    methods.append(member)
            if not has_reset:
                raise ValueError("Each environment instance returned by `environment_factory` must define a callable `reset`.")
            self._env_tools[name] = methods
            self._environment_pool[name] = [instance]
            self.tools += [method for method in methods if method not in self.tools]
            if has_reward and type(instance) not in env_reward_types:
                env_type = type(instance)
                env_reward_types.append(env_type)
                if inspect.iscoroutinefunction(instance.get_reward):
                    raise AssertionError("the LLMix classes' get_reward is synchronous")

                def get_reward(environments: List[Any], _env_type: type = env_type, **kwargs: Any) -> List[Optional[float]]:
                    return [e.get_reward() if type(e) is _env_type else None for e in environments]

                self.reward_funcs.append(get_reward)
                self.reward_func_names.append(env_type.__name__)
                self.reward_weights.append(1.0)
        if not self.reward_funcs:
            raise ValueError("No reward source provided. Pass `reward_funcs`, or an `environment_factory` whose environment "
                             "defines a `get_reward` method.")
        self.environments: Optional[List[Any]] = None
        self._sync_tool_dicts: List[Dict[str, Any]] = []

    def start_rollouts(self, inputs: List[Dict[str, Any]]) -> List[Any]:
        """``_generate_and_score_completions`` up to generation: draw pooled instances per example, build
        the per-rollout tool dicts (without ``reset`` and ``get_reward``), reset with the row (less the
        ``environment`` routing column) and append the returned string to the prompt's last message."""
        prompts = [x.get("prompt", [{"role": "user", "content": ""}]) for x in inputs]
        batch_environments = [x.get("environment") if self._multi_environment else None for x in inputs]
        for name in set(batch_environments):
            if name not in self.environment_factories:
                raise ValueError(f"Example has `environment={name!r}`, which is not among the environments passed to `environment_factory`.")
        self.environments = []
        pool_cursor: Dict[Any, int] = {}
        for name in batch_environments:
            pool = self._environment_pool[name]
            index = pool_cursor.get(name, 0)
            if index == len(pool):
                pool.append(self.environment_factories[name]())
            pool_cursor[name] = index + 1
            self.environments.append(pool[index])
        self._sync_tool_dicts = []
        for i in range(len(inputs)):
            methods = [member for member_name, member in _public_methods(self.environments[i])
                       if member_name not in ("reset", "get_reward") and not member_name.startswith("_")]
            self._sync_tool_dicts.append({tool.__name__: tool for tool in methods})
        for i, (prompt, environment, x) in enumerate(zip(prompts, self.environments, inputs)):
            reset_kwargs = {k: v for k, v in x.items() if k != "environment"} if self._multi_environment else x
            observation = environment.reset(**reset_kwargs)
            if observation is None:
                continue
            prompts[i] = prompt[:-1] + [{**prompt[-1], "content": prompt[-1]["content"] + observation}]
        return prompts

    def call_tool(self, index: int, tool_call: Dict[str, Any]) -> Tuple[str, Any]:
        return _run_tool_call(self._sync_tool_dicts[index], tool_call)

    def rewards(self, inputs: List[Dict[str, Any]], prompts: List[Any]) -> Tuple[Dict[str, List[float]], List[float]]:
        """Each reward source's column (by name) and the weighted total per rollout."""
        columns = _reward_columns(self.reward_funcs, inputs, prompts, self.environments)
        return dict(zip(self.reward_func_names, columns)), _weighted_nansum(columns, self.reward_weights)


def as_tool_call(action: Dict[str, Any]) -> Dict[str, Any]:
    """A recorded LLMix action as the parsed tool call GRPOTrainer hands its loop (a message is the
    ``send_message`` tool)."""
    if action["type"] == "tool_call":
        return {"type": "function", "function": {"name": action["tool"], "arguments": dict(action["args"])}}
    return {"type": "function", "function": {"name": "send_message", "arguments": {"content": action["content"]}}}


class IncrementEnv:
    """TRL's documented example environment (docs/source/grpo_trainer.md, "Environments"), without
    ``get_reward``: a second environment for the multi-environment run."""

    def reset(self, **kwargs: Any) -> Optional[str]:
        self.counter = 0
        return None

    def increment(self, step: int) -> int:
        """Increment the internal counter.

        Args:
            step: Value to add to the counter.

        Returns:
            The updated value of the counter.
        """
        self.counter += step
        return self.counter


def counter_reward(environments: List[Any], **kwargs: Any) -> List[Optional[float]]:
    return [float(e.counter) if isinstance(e, IncrementEnv) else None for e in environments]


class TrlContractTest(ServerTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.Owning = environment_factory(cls.client, ENV, task_ids=[REFERENCE_TASK], owns_reward=True)
        cls.Plain = environment_factory(cls.client, ENV, task_ids=[REFERENCE_TASK], owns_reward=False)
        cls.tool_names = {t["name"] for t in cls.client.env(ENV)["tools"]}

    def rows(self, n: int, **extra: Any) -> List[Dict[str, Any]]:
        """n copies of the reference task's ``trl-grpo`` row (a GRPO group: the sampler repeats a row)."""
        row = {"prompt": [{"role": "user", "content": self.ref["observations"][0]}], "env": ENV,
               "task_id": self.ref["task_id"], "seed": self.ref["seed"], "difficulty": "medium", "env_version": "1.0.0"}
        row.update(extra)
        return [copy.deepcopy(row) for _ in range(n)]

    def play(self, trainer: Any, inputs: List[Dict[str, Any]]) -> List[Any]:
        """Rollout 0 replays the whole oracle episode; rollout 1 makes one tool call and is cut off."""
        prompts = trainer.start_rollouts(inputs)
        for action in self.ref["actions"]:
            name, result = trainer.call_tool(0, as_tool_call(action))
            self.assertIsInstance(result, str, (name, result))
        first = next(a for a in self.ref["actions"] if a["type"] == "tool_call")
        self.assertIsInstance(trainer.call_tool(1, as_tool_call(first))[1], str)
        return prompts

    def tearDown(self) -> None:
        close_all(getattr(self, "_live", []))

    # -- TRL >= 1.8 -----------------------------------------------------------------------------------

    def test_trl18_environment_owns_the_reward_once(self) -> None:
        trainer = Trl18Trainer(self.Owning)  # no reward_funcs: the environment's get_reward is the reward
        self.assertEqual(trainer.reward_func_names, ["BillingDisputeEnv"])
        self.assertEqual(trainer.reward_weights, [1.0])
        self.assertEqual({t.__name__ for t in trainer.tools}, self.tool_names | {"send_message"})
        inputs = self.rows(2)
        prompts = self.play(trainer, inputs)
        self._live = trainer.environments
        self.assertEqual(set(trainer._sync_tool_dicts[0]), self.tool_names | {"send_message"})
        self.assertEqual(prompts[0], inputs[0]["prompt"])  # the exported prompt already holds the observation
        columns, totals = trainer.rewards(inputs, prompts)
        self.assertEqual(columns, {"BillingDisputeEnv": [1.0, 0.0]})
        self.assertEqual(totals, [1.0, 0.0])  # counted once
        # The next batch reuses the pooled instances; reset starts fresh episodes.
        first_pool = list(trainer._environment_pool[None])
        trainer.start_rollouts(self.rows(2))
        self.assertEqual([id(e) for e in trainer.environments], [id(e) for e in first_pool])
        self.assertEqual(trainer.rewards(inputs, prompts)[1], [0.0, 0.0])

    def test_trl18_outcome_reward_with_an_owning_class_is_refused(self) -> None:
        trainer = Trl18Trainer(self.Owning, reward_funcs=[outcome_reward])
        self.assertEqual(trainer.reward_func_names, ["outcome_reward", "BillingDisputeEnv"])
        inputs = self.rows(2)
        prompts = self.play(trainer, inputs)
        self._live = trainer.environments
        with self.assertRaisesRegex(RewardConfigError, "count the outcome twice"):
            trainer.rewards(inputs, prompts)
        self.assertTrue(issubclass(RewardConfigError, ValueError))

    def test_trl18_trainer_owned_outcome_takes_reward_weights(self) -> None:
        # Without get_reward and without reward_funcs TRL has no reward source at all.
        with self.assertRaisesRegex(ValueError, "No reward source provided"):
            Trl18Trainer(self.Plain)
        trainer = Trl18Trainer(self.Plain, reward_funcs=[outcome_reward], reward_weights=[0.5])
        self.assertEqual(trainer.reward_func_names, ["outcome_reward"])
        self.assertNotIn("get_reward", {t.__name__ for t in trainer.tools})
        inputs = self.rows(2)
        prompts = self.play(trainer, inputs)
        self._live = trainer.environments
        columns, totals = trainer.rewards(inputs, prompts)
        self.assertEqual(columns, {"outcome_reward": [1.0, 0.0]})
        self.assertEqual(totals, [0.5, 0.0])

    def test_trl18_multi_environment_rows_route_on_environment(self) -> None:
        # A dict factory: each row names its environment in an `environment` column (the trl-grpo rows'
        # `env` copied over), which TRL strips before reset; only that environment's tools are exposed.
        trainer = Trl18Trainer({ENV: self.Owning, "increment": IncrementEnv}, reward_funcs=[counter_reward])
        self.assertEqual(trainer.reward_func_names, ["counter_reward", "BillingDisputeEnv"])
        inputs = [dict(row, environment=row["env"]) for row in self.rows(2)]
        inputs.append({"prompt": [{"role": "user", "content": "Increment the counter by 3."}], "environment": "increment",
                       "env": "", "task_id": "", "seed": 0, "difficulty": "", "env_version": ""})
        prompts = self.play(trainer, inputs)
        self._live = trainer.environments[:2]
        self.assertEqual(set(trainer._sync_tool_dicts[2]), {"increment"})
        self.assertNotIn("increment", trainer._sync_tool_dicts[0])
        self.assertEqual(trainer.call_tool(2, {"type": "function", "function": {"name": "increment", "arguments": {"step": 3}}}), ("increment", 3))
        columns, totals = trainer.rewards(inputs, prompts)
        self.assertTrue(all(math.isnan(v) for v in columns["counter_reward"][:2]))
        self.assertEqual(columns["BillingDisputeEnv"][:2], [1.0, 0.0])
        self.assertTrue(math.isnan(columns["BillingDisputeEnv"][2]))
        self.assertEqual(totals, [1.0, 0.0, 3.0])
        # outcome_reward leaves other environments' rollouts alone (None, ignored by TRL).
        self.assertEqual(outcome_reward(environments=[trainer.environments[2]]), [None])

    # -- TRL <= 1.7 -----------------------------------------------------------------------------------

    def test_trl17_reward_function_and_no_get_reward_tool(self) -> None:
        trainer = Trl17Trainer(outcome_reward, self.Plain, generation_batch_size=2)
        self._live = trainer.environments
        self.assertEqual({t.__name__ for t in trainer.tools}, self.tool_names | {"send_message"})
        inputs = self.rows(2)
        prompts = self.play(trainer, inputs)
        self.assertEqual(prompts[0], inputs[0]["prompt"])
        columns, totals = trainer.rewards(inputs, prompts)
        self.assertEqual(columns, {"outcome_reward": [1.0, 0.0]})
        self.assertEqual(totals, [1.0, 0.0])

    def test_trl17_lists_get_reward_as_a_tool(self) -> None:
        # Why owns_reward=False is the class for TRL <= 1.7: there get_reward would be one more tool.
        trainer = Trl17Trainer(outcome_reward, self.Owning, generation_batch_size=1)
        self._live = trainer.environments
        self.assertIn("get_reward", trainer._sync_tool_dicts[0])
        self.assertEqual(set(trainer._sync_tool_dicts[0]), self.tool_names | {"send_message", "get_reward"})

    # -- choosing the contract ------------------------------------------------------------------------

    def test_default_follows_the_installed_trl(self) -> None:
        cases = [("1.7.1", False), ("0.29.0", False), ("1.8.0", True), ("1.10.0.dev0", True), (None, True)]
        for version, owns in cases:
            with mock.patch.object(llmix_trl, "installed_trl_version", return_value=version):
                cls = environment_factory(self.client, ENV, task_ids=[REFERENCE_TASK])
            self.assertIs(cls.owns_reward, owns, version)
            self.assertEqual(hasattr(cls, "get_reward"), owns, version)
            # An explicit choice wins over the installed version.
            with mock.patch.object(llmix_trl, "installed_trl_version", return_value=version):
                self.assertFalse(environment_factory(self.client, ENV, owns_reward=False).owns_reward)
        with mock.patch.object(llmix_trl, "installed_trl_version", return_value="main"):
            with self.assertRaisesRegex(ValueError, "not a TRL version"):
                environment_factory(self.client, ENV)
        with self.assertRaisesRegex(TypeError, "owns_reward"):
            environment_factory(self.client, ENV, owns_reward="yes")  # type: ignore[arg-type]

    def test_outcome_reward_inputs(self) -> None:
        with self.assertRaisesRegex(TypeError, "environments"):
            outcome_reward(prompts=["p"], completions=["c"])
        env = self.Plain()
        self._live = [env]
        self.assertEqual(outcome_reward(environments=[env, object()]), [0.0, None])  # no episode yet: 0.0


class EnvOwnsRewardTest(unittest.TestCase):
    def test_versions(self) -> None:
        for version, owns in [("0.29.1", False), ("1.7.0", False), ("1.7.1", False), ("v1.8.0", True), ("1.8.0rc1", True),
                              ("1.9.0", True), ("1.10.0.dev0", True), ("2.0", True)]:
            self.assertIs(env_owns_reward(version), owns, version)
        for bad in ("", "one.eight", "1"):
            with self.assertRaises(ValueError, msg=bad):
                env_owns_reward(bad)

    def test_installed_version_is_read_without_importing_trl(self) -> None:
        with mock.patch.object(llmix_trl.metadata, "version", side_effect=llmix_trl.metadata.PackageNotFoundError("trl")):
            self.assertIsNone(llmix_trl.installed_trl_version())
            self.assertTrue(env_owns_reward())
        with mock.patch.object(llmix_trl.metadata, "version", return_value="1.7.1") as version:
            self.assertFalse(env_owns_reward())
            version.assert_called_with("trl")
        self.assertNotIn("trl", sys.modules)


if __name__ == "__main__":
    unittest.main()
