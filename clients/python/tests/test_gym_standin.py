"""A stand-in for the parts of ``gymnasium`` the adapter meets, and tests that it enforces Gymnasium's rules.

PyPI cannot be reached from the machine these tests were written on, so gymnasium cannot be installed.
``fake_gymnasium()`` builds a small ``gymnasium`` package (module objects to put into ``sys.modules``)
whose logic is copied from the real source, read at Farama-Foundation/Gymnasium commit
3f0476a8cc224dcce2167cc4b6971ae0f04d5cfc (2026-08-19, ``v1.3.0-73``, ``__version__ = "1.4.0"``). The
files and functions read are named next to each piece; between the release v1.3.0 and that commit they
changed only in typing, in ``Text.__init__`` (``assert`` became ``TypeError``/``ValueError``, set
charsets are sorted) and in ``TimeLimit.__init__`` (likewise). numpy is replaced by the standard
library: the random generator is a ``random.Random`` behind the few ``numpy.random.Generator`` methods
used (``integers``, ``choice``, ``bit_generator.state``); numpy type tests become ``isinstance``.

What is reproduced (and what is left out):

- ``gymnasium/core.py``: ``Env`` (seeding in ``reset``, ``np_random``, ``unwrapped``, ``spec``,
  ``metadata``, ``render_mode``) and ``Wrapper`` (forwarding properties, ``spec`` deep-copied with the
  wrapper's ``WrapperSpec``); ``gymnasium/utils/record_constructor.py`` ``RecordConstructorArgs``.
- ``gymnasium/spaces/space.py`` ``Space`` and ``gymnasium/spaces/text.py`` ``Text`` (constructor checks,
  ``sample`` without masks: a length uniform in ``[min_length, max_length]``, characters uniform over the
  charset; ``contains``, ``character_set``, ``__eq__``); ``Box``, ``Discrete``, ``MultiDiscrete``,
  ``MultiBinary``, ``Tuple`` and ``Dict`` only as classes for the checkers' ``isinstance`` branches.
- ``gymnasium/utils/env_checker.py``: ``check_env`` and every check it runs, ``data_equivalence``.
- ``gymnasium/utils/passive_env_checker.py``: ``check_space``, ``check_obs``, the reset / step / render
  passive checkers.
- ``gymnasium/wrappers/common.py``: ``TimeLimit``, ``PassiveEnvChecker``, ``OrderEnforcing``,
  ``RecordEpisodeStatistics`` (not ``Autoreset``).
- ``gymnasium/envs/registration.py``: ``EnvSpec`` (``make``, ``to_json``), ``WrapperSpec``,
  ``parse_env_id``, ``register`` (with ``_check_spec_register``), ``spec``, ``make`` (deep copy of the
  kwargs, metadata check, the minimal spec set on ``env.unwrapped``, the wrapper stack) and
  ``load_env_creator``; not ``make_vec``, namespaces, plugins or human rendering.
- ``gymnasium.logger``: ``warn`` / ``deprecation`` record their messages in ``logger.messages``, so
  tests can require that a check ran without a warning.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import json
import math
import random
import re
import sys
import threading
import types
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple
from unittest import mock

UPSTREAM_COMMIT = "3f0476a8cc224dcce2167cc4b6971ae0f04d5cfc"


def fake_gymnasium() -> Dict[str, types.ModuleType]:
    """A fresh stand-in ``gymnasium`` package (own registry, own logger): ``{module name: module}``."""

    def module(name: str) -> types.ModuleType:
        return types.ModuleType(name)

    gym = module("gymnasium")
    error = module("gymnasium.error")
    logger = module("gymnasium.logger")
    spaces = module("gymnasium.spaces")
    utils = module("gymnasium.utils")
    seeding = module("gymnasium.utils.seeding")
    env_checker = module("gymnasium.utils.env_checker")
    passive = module("gymnasium.utils.passive_env_checker")
    wrappers = module("gymnasium.wrappers")
    envs = module("gymnasium.envs")
    registration = module("gymnasium.envs.registration")

    # -- gymnasium/error.py --
    class Error(Exception):
        """gymnasium.error.Error"""

    class RegistrationError(Error):
        """gymnasium.error.RegistrationError"""

    class InvalidMetadata(Error):
        """gymnasium.error.InvalidMetadata"""

    class ResetNeeded(Error):
        """gymnasium.error.ResetNeeded"""

    error.Error, error.RegistrationError, error.InvalidMetadata, error.ResetNeeded = Error, RegistrationError, InvalidMetadata, ResetNeeded

    # -- gymnasium/logger.py: warn / deprecation (recorded instead of printed) --
    messages: List[str] = []
    logger.messages = messages
    logger.warn = lambda msg, *args, **kwargs: messages.append(str(msg))
    logger.deprecation = lambda msg, *args, **kwargs: messages.append("deprecation: " + str(msg))

    # -- gymnasium/utils/seeding.py np_random, over random.Random instead of numpy --
    class BitGenerator:
        def __init__(self, rng: random.Random):
            self._rng = rng

        @property
        def state(self) -> Any:
            return self._rng.getstate()

    class Generator:
        """The methods of numpy.random.Generator that Text.sample and the checkers use."""

        def __init__(self, seed: int):
            self._rng = random.Random(seed)

        @property
        def bit_generator(self) -> BitGenerator:
            return BitGenerator(self._rng)

        def integers(self, low: int, high: int) -> int:  # numpy: high is exclusive
            return self._rng.randrange(low, high)

        def choice(self, seq: Any, size: int, p: Any = None) -> List[Any]:
            if p is None:
                return [seq[self._rng.randrange(len(seq))] for _ in range(size)]
            return self._rng.choices(seq, weights=p, k=size)

    def np_random(seed: Optional[int] = None) -> Tuple[Generator, int]:
        if seed is not None and not (isinstance(seed, int) and 0 <= seed):
            raise Error(f"Seed must be a python integer, actual type: {type(seed)}" if not isinstance(seed, int)
                        else f"Seed must be greater or equal to zero, actual value: {seed}")
        if seed is None:
            seed = random.SystemRandom().randrange(2**63)
        return Generator(seed), seed

    seeding.np_random = np_random

    # -- gymnasium/spaces/space.py Space, gymnasium/spaces/text.py Text --
    class Space:
        def __init__(self, shape: Any = None, dtype: Any = None, seed: Any = None):
            self._shape = None if shape is None else tuple(shape)
            self.dtype = dtype
            self._np_random = None
            if seed is not None:
                if isinstance(seed, Generator):
                    self._np_random = seed
                else:
                    self.seed(seed)

        @property
        def np_random(self) -> Generator:
            if self._np_random is None:
                self.seed()
            return self._np_random

        @property
        def shape(self) -> Any:
            return self._shape

        def seed(self, seed: Optional[int] = None) -> int:
            self._np_random, np_random_seed = np_random(seed)
            return np_random_seed

        def sample(self, mask: Any = None, probability: Any = None) -> Any:
            raise NotImplementedError

        def contains(self, x: Any) -> bool:
            raise NotImplementedError

        def __contains__(self, x: Any) -> bool:
            return self.contains(x)

    alphanumeric = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

    class Text(Space):
        def __init__(self, max_length: int, *, min_length: int = 1, charset: Any = alphanumeric, seed: Any = None):
            if not isinstance(min_length, int):
                raise TypeError(f"Expects the min_length to be an integer, actual type: {type(min_length)}")
            if not isinstance(max_length, int):
                raise TypeError(f"Expects the max_length to be an integer, actual type: {type(max_length)}")
            if min_length < 0:
                raise ValueError(f"Minimum text length must be non-negative, actual value: {min_length}")
            if min_length > max_length:
                raise ValueError(f"The min_length must be less than or equal to the max_length, min_length: {min_length}, max_length: {max_length}")
            self.min_length = int(min_length)
            self.max_length = int(max_length)
            char_list = sorted(charset) if isinstance(charset, (set, frozenset)) else list(dict.fromkeys(charset))
            invalid_chars = [char for char in char_list if len(char) != 1]
            if invalid_chars:
                raise ValueError(f"Expects all charset elements to be a single character, actual invalid elements: {invalid_chars}")
            self._char_set = frozenset(char_list)
            self._char_list = tuple(char_list)
            self._char_str = "".join(sorted(char_list))
            super().__init__(dtype=str, seed=seed)

        def sample(self, mask: Any = None, probability: Any = None) -> str:
            # Text.sample with mask=None, probability=None: uniform length, then uniform characters.
            if mask is not None or probability is not None:
                raise NotImplementedError("the stand-in samples without masks")
            length = self.np_random.integers(self.min_length, self.max_length + 1)
            return "".join(self.np_random.choice(self.character_list, size=length))

        def contains(self, x: Any) -> bool:
            if isinstance(x, str):
                if self.min_length <= len(x) <= self.max_length:
                    return all(c in self.character_set for c in x)
            return False

        def __repr__(self) -> str:
            return f"Text({self.min_length}, {self.max_length}, charset={self.characters})"

        def __eq__(self, other: object) -> bool:
            return (isinstance(other, Text) and self.min_length == other.min_length
                    and self.max_length == other.max_length and self.character_set == other.character_set)

        @property
        def character_set(self) -> frozenset:
            return self._char_set

        @property
        def character_list(self) -> Tuple[str, ...]:
            return self._char_list

        @property
        def characters(self) -> str:
            return self._char_str

    class Box(Space):
        """Only for isinstance branches."""

    class Discrete(Space):
        """Only for isinstance branches."""

    class MultiDiscrete(Space):
        """Only for isinstance branches."""

    class MultiBinary(Space):
        """Only for isinstance branches."""

    class Tuple_(Space):
        """Only for isinstance branches."""

    class Dict_(Space):
        """Only for isinstance branches."""

    for name, value in {"Space": Space, "Text": Text, "Box": Box, "Discrete": Discrete, "MultiDiscrete": MultiDiscrete,
                        "MultiBinary": MultiBinary, "Tuple": Tuple_, "Dict": Dict_}.items():
        setattr(spaces, name, value)

    # -- gymnasium/utils/record_constructor.py RecordConstructorArgs --
    class RecordConstructorArgs:
        def __init__(self, *, _disable_deepcopy: bool = False, **kwargs: Any):
            if not hasattr(self, "_saved_kwargs"):
                if _disable_deepcopy is False:
                    kwargs = copy.deepcopy(kwargs)
                self._saved_kwargs = kwargs

    utils.RecordConstructorArgs = RecordConstructorArgs
    utils.seeding = seeding

    # -- gymnasium/core.py Env, Wrapper --
    class Env:
        metadata: Dict[str, Any] = {"render_modes": []}
        render_mode: Optional[str] = None
        spec: Any = None
        _np_random: Optional[Generator] = None
        _np_random_seed: Optional[int] = None

        def step(self, action: Any) -> Any:
            raise NotImplementedError

        def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Any:
            if seed is not None:
                self._np_random, self._np_random_seed = np_random(seed)

        def render(self) -> Any:
            raise NotImplementedError

        def close(self) -> None:
            pass

        @property
        def unwrapped(self) -> "Env":
            return self

        @property
        def np_random(self) -> Generator:
            if self._np_random is None:
                self._np_random, self._np_random_seed = np_random()
            return self._np_random

        def __str__(self) -> str:
            return f"<{type(self).__name__} instance>" if self.spec is None else f"<{type(self).__name__}<{self.spec.id}>>"

    class Wrapper(Env):
        def __init__(self, env: Env):
            self.env = env
            if not isinstance(env, Env):
                raise TypeError(f"Expected env to be a `gymnasium.Env` but got {type(env)}")
            self._action_space = None
            self._observation_space = None
            self._metadata = None
            self._cached_spec = None

        def step(self, action: Any) -> Any:
            return self.env.step(action)

        def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Any:
            return self.env.reset(seed=seed, options=options)

        def render(self) -> Any:
            return self.env.render()

        def close(self) -> None:
            return self.env.close()

        @property
        def unwrapped(self) -> Env:
            return self.env.unwrapped

        @property
        def spec(self) -> Any:
            # Wrapper.spec: the inner spec deep-copied, plus this wrapper's WrapperSpec; None (and a
            # warning) when the copy fails.
            if self._cached_spec is not None:
                return self._cached_spec
            env_spec = self.env.spec
            if env_spec is not None:
                if isinstance(self, RecordConstructorArgs):
                    kwargs = self._saved_kwargs
                    if "env" in kwargs:
                        kwargs = copy.deepcopy(kwargs)
                        kwargs.pop("env")
                else:
                    kwargs = None
                wrapper_spec = WrapperSpec(name=type(self).__name__, entry_point=f"{self.__module__}:{type(self).__name__}", kwargs=kwargs)
                try:
                    env_spec = copy.deepcopy(env_spec)
                    env_spec.additional_wrappers += (wrapper_spec,)
                except Exception as e:  # noqa: BLE001 - as upstream
                    logger.warn(f"An exception occurred ({e}) while copying the environment spec={env_spec}")
                    return None
            self._cached_spec = env_spec
            return env_spec

        @property
        def action_space(self) -> Any:
            return self.env.action_space if self._action_space is None else self._action_space

        @property
        def observation_space(self) -> Any:
            return self.env.observation_space if self._observation_space is None else self._observation_space

        @property
        def metadata(self) -> Dict[str, Any]:  # type: ignore[override]
            return self.env.metadata if self._metadata is None else self._metadata

        @property
        def render_mode(self) -> Optional[str]:  # type: ignore[override]
            return self.env.render_mode

        @property
        def np_random(self) -> Generator:
            return self.env.np_random

        @property
        def _np_random(self) -> Any:  # type: ignore[override]
            raise AttributeError("Can't access `_np_random` of a wrapper, use `.unwrapped._np_random` or `.np_random`.")

        def get_wrapper_attr(self, name: str) -> Any:
            if hasattr(self, name):
                return getattr(self, name)
            return self.env.get_wrapper_attr(name) if isinstance(self.env, Wrapper) else getattr(self.env, name)

        def __str__(self) -> str:
            return f"<{type(self).__name__}{self.env}>"

    # -- gymnasium/utils/passive_env_checker.py --
    def check_space(space: Any, space_type: str) -> None:
        if not isinstance(space, Space):
            raise TypeError(f"{space_type} space does not inherit from `gymnasium.spaces.Space`, actual type: {type(space)}")
        # The Box / Discrete / MultiDiscrete / MultiBinary / Tuple / Dict branches check only those spaces.

    def check_obs(obs: Any, observation_space: Any, method_name: str) -> None:
        pre = f"The obs returned by the `{method_name}()` method"
        try:
            if obs not in observation_space:
                logger.warn(f"{pre} is not within the observation space.")
        except Exception as e:  # noqa: BLE001 - as upstream
            logger.warn(f"{pre} is not within the observation space with exception: {e}")

    def env_reset_passive_checker(env: Env, **kwargs: Any) -> Any:
        signature = inspect.signature(env.reset)
        if "seed" not in signature.parameters and "kwargs" not in signature.parameters:
            logger.deprecation("Current gymnasium version requires that `Env.reset` can be passed a `seed` instead of using `Env.seed` for resetting the environment random number generator.")
        else:
            seed_param = signature.parameters.get("seed")
            if seed_param is not None and seed_param.default is not None:
                logger.warn(f"The default seed argument in `Env.reset` should be `None`, otherwise the environment will by default always be deterministic. Actual default: {seed_param}")
        if "options" not in signature.parameters and "kwargs" not in signature.parameters:
            logger.deprecation("Current gymnasium version requires that `Env.reset` can be passed `options` to allow the environment initialisation to be passed additional information.")
        result = env.reset(**kwargs)
        if not isinstance(result, tuple):
            logger.warn(f"The result returned by `env.reset()` was not a tuple of the form `(obs, info)`, where `obs` is a observation and `info` is a dictionary containing additional information. Actual type: `{type(result)}`")
        elif len(result) != 2:
            logger.warn("The result returned by `env.reset()` should be `(obs, info)` by default, , where `obs` is a observation and `info` is a dictionary containing additional information.")
        else:
            obs, info = result
            check_obs(obs, env.observation_space, "reset")
            assert isinstance(info, dict), f"The second element returned by `env.reset()` was not a dictionary, actual type: {type(info)}"
        return result

    def is_number(value: Any) -> bool:  # np.issubdtype(type(v), np.integer) or np.issubdtype(type(v), np.floating)
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    def env_step_passive_checker(env: Env, action: Any) -> Any:
        result = env.step(action)
        assert isinstance(result, tuple), f"Expects step result to be a tuple, actual type: {type(result)}"
        if len(result) == 4:
            logger.deprecation("Core environment is written in old step API which returns one bool instead of two. It is recommended to rewrite the environment with new step API. ")
            obs, reward, done, info = result
            if not isinstance(done, bool):
                logger.warn(f"Expects `done` signal to be a boolean, actual type: {type(done)}")
        elif len(result) == 5:
            obs, reward, terminated, truncated, info = result
            if not isinstance(terminated, bool):
                logger.warn(f"Expects `terminated` signal to be a boolean, actual type: {type(terminated)}")
            if not isinstance(truncated, bool):
                logger.warn(f"Expects `truncated` signal to be a boolean, actual type: {type(truncated)}")
        else:
            raise Error(f"Expected `Env.step` to return a four or five element tuple, actual number of elements returned: {len(result)}.")
        check_obs(obs, env.observation_space, "step")
        if not is_number(reward):
            logger.warn(f"The reward returned by `step()` must be a float, int, np.integer or np.floating, actual type: {type(reward)}")
        else:
            if math.isnan(reward):
                logger.warn("The reward is a NaN value.")
            if math.isinf(reward):
                logger.warn("The reward is an inf value.")
        assert isinstance(info, dict), f"The `info` returned by `step()` must be a python dictionary, actual type: {type(info)}"
        return result

    def _check_render_return(render_mode: str, render_return: Any) -> None:
        if render_mode in ["ansi", "ascii"]:
            if not isinstance(render_return, str):
                logger.warn(f"ANSI/ASCII rendering should produce a string, got {type(render_return)}")
        elif render_mode == "human":
            if render_return is not None:
                logger.warn(f"Human rendering should return `None`, got {type(render_return)}")
        # rgb_array / depth_array / *_list need numpy arrays: not reproduced.

    def env_render_passive_checker(env: Env) -> Any:
        render_modes = env.metadata.get("render_modes")
        if render_modes is None:
            logger.warn("No render modes was declared in the environment (env.metadata['render_modes'] is None or not defined), you may have trouble when calling `.render()`.")
        else:
            if not isinstance(render_modes, (list, tuple)):
                logger.warn(f"Expects the render_modes to be a sequence (i.e. list, tuple), actual type: {type(render_modes)}")
            elif not all(isinstance(mode, str) for mode in render_modes):
                logger.warn(f"Expects all render modes to be strings, actual types: {[type(mode) for mode in render_modes]}")
            render_fps = env.metadata.get("render_fps")
            if len(render_modes) > 0:
                if render_fps is None:
                    logger.warn("No render fps was declared in the environment (env.metadata['render_fps'] is None or not defined), rendering may occur at inconsistent fps.")
                elif not is_number(render_fps):
                    logger.warn(f"Expects the `env.metadata['render_fps']` to be an integer or a float, actual type: {type(render_fps)}")
                else:
                    assert render_fps > 0, f"Expects the `env.metadata['render_fps']` to be greater than zero, actual value: {render_fps}"
            if len(render_modes) == 0:
                assert env.render_mode is None, f"With no render_modes, expects the Env.render_mode to be None, actual value: {env.render_mode}"
            else:
                assert env.render_mode is None or env.render_mode in render_modes, (
                    "The environment was initialized successfully however with an unsupported render mode. "
                    f"Render mode: {env.render_mode}, modes: {render_modes}")
        result = env.render()
        if env.render_mode is not None:
            _check_render_return(env.render_mode, result)
        return result

    passive.check_action_space = lambda space: check_space(space, "action")
    passive.check_observation_space = lambda space: check_space(space, "observation")
    passive.check_obs = check_obs
    passive.env_reset_passive_checker = env_reset_passive_checker
    passive.env_step_passive_checker = env_step_passive_checker
    passive.env_render_passive_checker = env_render_passive_checker

    # -- gymnasium/utils/env_checker.py --
    def data_equivalence(data_1: Any, data_2: Any, exact: bool = False) -> bool:
        if type(data_1) is not type(data_2):
            return False
        if isinstance(data_1, dict):
            return data_1.keys() == data_2.keys() and all(data_equivalence(data_1[k], data_2[k], exact) for k in data_1.keys())
        if isinstance(data_1, (tuple, list)):
            return len(data_1) == len(data_2) and all(data_equivalence(a, b, exact) for a, b in zip(data_1, data_2))
        return bool(data_1 == data_2)

    def check_reset_seed_determinism(env: Env) -> None:
        signature = inspect.signature(env.reset)
        if "seed" in signature.parameters or ("kwargs" in signature.parameters and signature.parameters["kwargs"].kind is inspect.Parameter.VAR_KEYWORD):
            try:
                obs_1, info = env.reset(seed=123)
                assert obs_1 in env.observation_space, "The observation returned by `env.reset(seed=123)` is not within the observation space."
                assert env.unwrapped._np_random is not None, (
                    "Expects the random number generator to have been generated given a seed was passed to reset. Most likely the environment reset function does not call `super().reset(seed=seed)`.")
                seed_123_rng_1 = copy.deepcopy(env.unwrapped._np_random)
                obs_2, info = env.reset()
                assert obs_2 in env.observation_space, "The observation returned by `env.reset()` is not within the observation space."
                obs_3, info = env.reset(seed=123)
                assert obs_3 in env.observation_space, "The observation returned by `env.reset(seed=123)` is not within the observation space."
                seed_123_rng_3 = copy.deepcopy(env.unwrapped._np_random)
                obs_4, info = env.reset()
                assert obs_4 in env.observation_space, "The observation returned by `env.reset()` is not within the observation space."
                if env.spec is not None and env.spec.nondeterministic is False:
                    assert data_equivalence(obs_1, obs_3), "Using `env.reset(seed=123)` is non-deterministic as the observations are not equivalent."
                    assert data_equivalence(obs_2, obs_4), "Using `env.reset(seed=123)` then `env.reset()` is non-deterministic as the observations are not equivalent."
                    if not data_equivalence(obs_1, obs_3, exact=True):
                        logger.warn("Using `env.reset(seed=123)` observations are not equal although similar.")
                    if not data_equivalence(obs_2, obs_4, exact=True):
                        logger.warn("Using `env.reset(seed=123)` then `env.reset()` observations are not equal although similar.")
                assert seed_123_rng_1.bit_generator.state == seed_123_rng_3.bit_generator.state, (
                    "Most likely the environment reset function does not call `super().reset(seed=seed)` as the random generates are not same when the same seeds are passed to `env.reset`.")
                obs_5, info = env.reset(seed=456)
                assert obs_5 in env.observation_space, "The observation returned by `env.reset(seed=456)` is not within the observation space."
                assert env.unwrapped._np_random.bit_generator.state != seed_123_rng_1.bit_generator.state, (
                    "Most likely the environment reset function does not call `super().reset(seed=seed)` as the random number generators are not different when different seeds are passed to `env.reset`.")
            except TypeError as e:
                raise AssertionError(
                    "The environment cannot be reset with a random seed, even though `seed` or `kwargs` appear in the signature. "
                    f"This should never happen, please report this issue. The error was: {e}") from e
            seed_param = signature.parameters.get("seed")
            if seed_param is not None and seed_param.default is not None:
                logger.warn(f"The default seed argument in reset should be `None`, otherwise the environment will by default always be deterministic. Actual default: {seed_param.default}")
        else:
            raise Error("The `reset` method does not provide a `seed` or `**kwargs` keyword argument.")

    def check_reset_options(env: Env) -> None:
        signature = inspect.signature(env.reset)
        if "options" in signature.parameters or ("kwargs" in signature.parameters and signature.parameters["kwargs"].kind is inspect.Parameter.VAR_KEYWORD):
            try:
                env.reset(options={})
            except TypeError as e:
                raise AssertionError(
                    "The environment cannot be reset with options, even though `options` or `**kwargs` appear in the signature. "
                    f"This should never happen, please report this issue. The error was: {e}") from e
        else:
            raise Error("The `reset` method does not provide an `options` or `**kwargs` keyword argument.")

    def check_step_determinism(env: Env, seed: int = 123) -> None:
        if env.spec is not None and env.spec.nondeterministic is True:
            return
        env.action_space.seed(seed)
        action = env.action_space.sample()
        env.reset(seed=seed)
        obs_0, rew_0, term_0, trunc_0, info_0 = env.step(action)
        orig_rng = env.unwrapped._np_random
        assert orig_rng is not None, "env.reset() should have initialized env._np_random"
        seeded_rng = copy.deepcopy(orig_rng)
        env.reset(seed=seed)
        obs_1, rew_1, term_1, trunc_1, info_1 = env.step(action)
        assert orig_rng.bit_generator.state == seeded_rng.bit_generator.state, "The `.np_random` is not properly been updated after step."
        assert data_equivalence(obs_0, obs_1), "Deterministic step observations are not equivalent for the same seed and action"
        if not data_equivalence(obs_0, obs_1, exact=True):
            logger.warn("Step observations are not equal although similar given the same seed and action")
        assert data_equivalence(rew_0, rew_1), "Deterministic step rewards are not equivalent for the same seed and action"
        if not data_equivalence(rew_0, rew_1, exact=True):
            logger.warn("Step rewards are not equal although similar given the same seed and action")
        assert data_equivalence(term_0, term_1, exact=True), "Deterministic step termination are not equivalent for the same seed and action"
        assert trunc_0 is False and trunc_1 is False, "Environment truncates after 1 step, something has gone very wrong."
        assert data_equivalence(info_0, info_1), "Deterministic step info are not equivalent for the same seed and action"
        if not data_equivalence(info_0, info_1, exact=True):
            logger.warn("Step info are not equal although similar given the same seed and action")

    def check_reset_return_type(env: Env) -> None:
        result = env.reset()
        assert isinstance(result, tuple), f"The result returned by `env.reset()` was not a tuple of the form `(obs, info)`, where `obs` is a observation and `info` is a dictionary containing additional information. Actual type: `{type(result)}`"
        assert len(result) == 2, f"Calling the reset method did not return a 2-tuple, actual length: {len(result)}"
        obs, info = result
        assert obs in env.observation_space, "The first element returned by `env.reset()` is not within the observation space."
        assert isinstance(info, dict), f"The second element returned by `env.reset()` was not a dictionary, actual type: {type(info)}"

    def check_env(env: Env, warn: Optional[bool] = None, skip_render_check: bool = False, skip_close_check: bool = False) -> None:
        if warn is not None:
            logger.warn("`check_env(warn=...)` parameter is now ignored.")
        if not isinstance(env, Env):
            raise TypeError(f"The environment must inherit from the gymnasium.Env class, actual class: {type(env)}. "
                            "See https://gymnasium.farama.org/introduction/create_custom_env/ for more info.")
        if env.unwrapped is not env:
            logger.warn(f"The environment ({env}) is different from the unwrapped version ({env.unwrapped}). This could effect the environment checker as the environment most likely has a wrapper applied to it. We recommend using the raw environment for `check_env` using `env.unwrapped`.")
        if env.metadata.get("jax", False) or env.metadata.get("torch", False):
            raise NotImplementedError("the stand-in has no JaxToNumpy / TorchToNumpy")
        if not hasattr(env, "action_space"):
            raise AttributeError("The environment must specify an action space. See https://gymnasium.farama.org/introduction/create_custom_env/ for more info.")
        passive.check_action_space(env.action_space)
        # check_space_limit: only Box spaces (and Tuple / Dict of them) are looked at.
        if not hasattr(env, "observation_space"):
            raise AttributeError("The environment must specify an observation space. See https://gymnasium.farama.org/introduction/create_custom_env/ for more info.")
        passive.check_observation_space(env.observation_space)
        # check_seed_deprecation, check_reset_return_info_deprecation
        if callable(getattr(env, "seed", None)):
            logger.warn("Official support for the `seed` function is dropped. Standard practice is to reset gymnasium environments using `env.reset(seed=<desired seed>)`")
        if "return_info" in inspect.signature(env.reset).parameters:
            logger.warn("`return_info` is deprecated as an optional argument to `reset`.")
        check_reset_return_type(env)
        check_reset_seed_determinism(env)
        check_reset_options(env)
        env_reset_passive_checker(env)
        env_step_passive_checker(env, env.action_space.sample())
        check_step_determinism(env)
        if not skip_render_check:
            if env.render_mode is not None:
                env_render_passive_checker(env)
            if env.spec is not None:
                for render_mode in env.metadata["render_modes"]:
                    new_env = env.spec.make(render_mode=render_mode)
                    new_env.reset()
                    env_render_passive_checker(new_env)
                    new_env.close()
            else:
                logger.warn("Not able to test alternative render modes due to the environment not having a spec. Try instantiating the environment through `gymnasium.make`")
        if not skip_close_check and env.spec is not None:
            new_env = env.spec.make()
            new_env.close()
            try:
                new_env.close()
            except Exception as e:  # noqa: BLE001 - as upstream
                logger.warn(f"Calling `env.close()` on the closed environment should be allowed, but it raised an exception: {e}")

    env_checker.check_env = check_env
    env_checker.data_equivalence = data_equivalence
    env_checker.check_step_determinism = check_step_determinism
    env_checker.check_reset_seed_determinism = check_reset_seed_determinism
    utils.env_checker = env_checker
    utils.passive_env_checker = passive

    # -- gymnasium/wrappers/common.py --
    class TimeLimit(Wrapper, RecordConstructorArgs):
        def __init__(self, env: Env, max_episode_steps: int):
            if not isinstance(max_episode_steps, int):
                raise TypeError(f"Expect the `max_episode_steps` to be an integer, actually: {type(max_episode_steps)}")
            if max_episode_steps <= 0:
                raise ValueError(f"Expect the `max_episode_steps` to be positive, actually: {max_episode_steps}")
            RecordConstructorArgs.__init__(self, max_episode_steps=max_episode_steps)
            Wrapper.__init__(self, env)
            self._max_episode_steps = max_episode_steps
            self._elapsed_steps: Optional[int] = None

        def step(self, action: Any) -> Any:
            observation, reward, terminated, truncated, info = self.env.step(action)
            self._elapsed_steps += 1  # type: ignore[operator]
            if self._elapsed_steps >= self._max_episode_steps:
                truncated = True
            return observation, reward, terminated, truncated, info

        def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Any:
            self._elapsed_steps = 0
            return super().reset(seed=seed, options=options)

        @property
        def spec(self) -> Any:
            if self._cached_spec is not None:
                return self._cached_spec
            env_spec = self.env.spec
            if env_spec is not None:
                try:
                    env_spec = copy.deepcopy(env_spec)
                    env_spec.max_episode_steps = self._max_episode_steps
                except Exception as e:  # noqa: BLE001 - as upstream
                    logger.warn(f"An exception occurred ({e}) while copying the environment spec={env_spec}")
                    return None
            self._cached_spec = env_spec
            return env_spec

    class PassiveEnvChecker(Wrapper, RecordConstructorArgs):
        def __init__(self, env: Env):
            RecordConstructorArgs.__init__(self)
            Wrapper.__init__(self, env)
            if not isinstance(env, Env):
                raise TypeError(f"The environment must inherit from the gymnasium.Env class, actual class: {type(env)}.")
            if not hasattr(env, "action_space"):
                raise AttributeError("The environment must specify an action space. https://gymnasium.farama.org/introduction/create_custom_env/")
            passive.check_action_space(env.action_space)
            if not hasattr(env, "observation_space"):
                raise AttributeError("The environment must specify an observation space. https://gymnasium.farama.org/introduction/create_custom_env/")
            passive.check_observation_space(env.observation_space)
            self.checked_reset = False
            self.checked_step = False
            self.checked_render = False
            self.close_called = False

        def step(self, action: Any) -> Any:
            if self.checked_step is False:
                self.checked_step = True
                return env_step_passive_checker(self.env, action)
            return self.env.step(action)

        def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Any:
            if self.checked_reset is False:
                self.checked_reset = True
                return env_reset_passive_checker(self.env, seed=seed, options=options)
            return self.env.reset(seed=seed, options=options)

        def render(self) -> Any:
            if self.checked_render is False:
                self.checked_render = True
                return env_render_passive_checker(self.env)
            return self.env.render()

        @property
        def spec(self) -> Any:
            if self._cached_spec is not None:
                return self._cached_spec
            env_spec = self.env.spec
            if env_spec is not None:
                try:
                    env_spec = copy.deepcopy(env_spec)
                    env_spec.disable_env_checker = False
                except Exception as e:  # noqa: BLE001 - as upstream
                    logger.warn(f"An exception occurred ({e}) while copying the environment spec={env_spec}")
                    return None
            self._cached_spec = env_spec
            return env_spec

        def close(self) -> None:
            if not self.close_called:
                self.close_called = True
                return self.env.close()
            try:
                return self.env.close()
            except Exception as e:
                logger.warn("Calling `env.close()` on the closed environment should be allowed, but it raised the following exception.")
                raise e

    class OrderEnforcing(Wrapper, RecordConstructorArgs):
        def __init__(self, env: Env, disable_render_order_enforcing: bool = False):
            RecordConstructorArgs.__init__(self, disable_render_order_enforcing=disable_render_order_enforcing)
            Wrapper.__init__(self, env)
            self._has_reset = False
            self._disable_render_order_enforcing = disable_render_order_enforcing

        def step(self, action: Any) -> Any:
            if not self._has_reset:
                raise ResetNeeded("Cannot call env.step() before calling env.reset()")
            return super().step(action)

        def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Any:
            self._has_reset = True
            return super().reset(seed=seed, options=options)

        def render(self) -> Any:
            if not self._disable_render_order_enforcing and not self._has_reset:
                raise ResetNeeded("Cannot call `env.render()` before calling `env.reset()`, if this is an intended action, "
                                  "set `disable_render_order_enforcing=True` on the OrderEnforcer wrapper.")
            return super().render()

        @property
        def has_reset(self) -> bool:
            return self._has_reset

        @property
        def spec(self) -> Any:
            if self._cached_spec is not None:
                return self._cached_spec
            env_spec = self.env.spec
            if env_spec is not None:
                try:
                    env_spec = copy.deepcopy(env_spec)
                    env_spec.order_enforce = True
                except Exception as e:  # noqa: BLE001 - as upstream
                    logger.warn(f"An exception occurred ({e}) while copying the environment spec={env_spec}")
                    return None
            self._cached_spec = env_spec
            return env_spec

    class RecordEpisodeStatistics(Wrapper, RecordConstructorArgs):
        def __init__(self, env: Env, buffer_length: int = 100, stats_key: str = "episode"):
            RecordConstructorArgs.__init__(self, buffer_length=buffer_length, stats_key=stats_key)
            Wrapper.__init__(self, env)
            self._stats_key = stats_key
            self.episode_count = 0
            self.episode_start_time = -1.0
            self.episode_returns = 0.0
            self.episode_lengths = 0
            self.return_queue: List[float] = []
            self.length_queue: List[int] = []

        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, info = super().step(action)
            self.episode_returns += reward
            self.episode_lengths += 1
            if terminated or truncated:
                assert self._stats_key not in info
                info[self._stats_key] = {"r": self.episode_returns, "l": self.episode_lengths, "t": 0.0}
                self.return_queue.append(self.episode_returns)
                self.length_queue.append(self.episode_lengths)
                self.episode_count += 1
            return obs, reward, terminated, truncated, info

        def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Any:
            obs, info = super().reset(seed=seed, options=options)
            self.episode_returns = 0.0
            self.episode_lengths = 0
            return obs, info

    for cls in (TimeLimit, PassiveEnvChecker, OrderEnforcing, RecordEpisodeStatistics):
        cls.__module__ = "gymnasium.wrappers.common"
        setattr(wrappers, cls.__name__, cls)

    # -- gymnasium/envs/registration.py --
    env_id_re = re.compile(r"^(?:(?P<namespace>[\w:-]+)\/)?(?:(?P<name>[\w:.-]+?))(?:-v(?P<version>\d+))?$")

    def parse_env_id(env_id: str) -> Tuple[Optional[str], str, Optional[int]]:
        match = env_id_re.fullmatch(env_id)
        if not match:
            raise Error(f"Malformed environment ID: {env_id}. (Currently all IDs must be of the form [namespace/](env-name)-v(version). (namespace is optional))")
        ns, name, version = match.group("namespace", "name", "version")
        return ns, name, (int(version) if version is not None else None)

    @dataclasses.dataclass
    class WrapperSpec:
        name: str
        entry_point: str
        kwargs: Optional[Dict[str, Any]]

    @dataclasses.dataclass
    class EnvSpec:
        id: str
        entry_point: Any = dataclasses.field(default=None)
        reward_threshold: Optional[float] = dataclasses.field(default=None)
        nondeterministic: bool = dataclasses.field(default=False)
        max_episode_steps: Optional[int] = dataclasses.field(default=None)
        order_enforce: bool = dataclasses.field(default=True)
        disable_env_checker: bool = dataclasses.field(default=False)
        kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)
        namespace: Optional[str] = dataclasses.field(init=False)
        name: str = dataclasses.field(init=False)
        version: Optional[int] = dataclasses.field(init=False)
        additional_wrappers: Tuple[Any, ...] = dataclasses.field(default_factory=tuple)
        vector_entry_point: Any = dataclasses.field(default=None)

        def __post_init__(self) -> None:
            self.namespace, self.name, self.version = parse_env_id(self.id)

        def make(self, **kwargs: Any) -> Env:
            return make(self, **kwargs)

        def to_json(self) -> str:
            env_spec_dict = dataclasses.asdict(self)
            env_spec_dict.pop("namespace")
            env_spec_dict.pop("name")
            env_spec_dict.pop("version")
            for key, value in env_spec_dict.items():  # EnvSpec._check_can_jsonify
                if callable(value):
                    raise ValueError(f"Callable found in {env_spec_dict['id']} for {key} attribute with value={value}. Currently, Gymnasium does not support serialising callables.")
            return json.dumps(env_spec_dict)

    registry: Dict[str, EnvSpec] = {}

    def _check_spec_register(testing_spec: EnvSpec) -> None:
        latest_versioned_spec = max((s for s in registry.values() if s.namespace == testing_spec.namespace and s.name == testing_spec.name and s.version is not None),
                                    key=lambda s: int(s.version), default=None)
        unversioned_spec = next((s for s in registry.values() if s.namespace == testing_spec.namespace and s.name == testing_spec.name and s.version is None), None)
        if unversioned_spec is not None and testing_spec.version is not None:
            raise RegistrationError(f"Can't register the versioned environment `{testing_spec.id}` when the unversioned environment `{unversioned_spec.id}` of the same name already exists.")
        if latest_versioned_spec is not None and testing_spec.version is None:
            raise RegistrationError(f"Can't register the unversioned environment `{testing_spec.id}` when the versioned environment `{latest_versioned_spec.id}` of the same name already exists.")

    def register(id: str, entry_point: Any = None, reward_threshold: Optional[float] = None, nondeterministic: bool = False,
                 max_episode_steps: Optional[int] = None, order_enforce: bool = True, disable_env_checker: bool = False,
                 additional_wrappers: Tuple[Any, ...] = (), vector_entry_point: Any = None, kwargs: Optional[Dict[str, Any]] = None) -> None:
        if entry_point is None and vector_entry_point is None:
            raise ValueError("Either `entry_point` or `vector_entry_point` (or both) must be provided")
        parse_env_id(id)
        new_spec = EnvSpec(id=id, entry_point=entry_point, reward_threshold=reward_threshold, nondeterministic=nondeterministic,
                           max_episode_steps=max_episode_steps, order_enforce=order_enforce, disable_env_checker=disable_env_checker,
                           kwargs=dict(kwargs or {}), additional_wrappers=additional_wrappers, vector_entry_point=vector_entry_point)
        _check_spec_register(new_spec)
        if new_spec.id in registry:
            logger.warn(f"Overriding environment {new_spec.id} already in registry.")
        registry[new_spec.id] = new_spec

    def spec(env_id: str) -> EnvSpec:
        env_spec = registry.get(env_id)
        if env_spec is None:
            raise Error(f"No registered env with id: {env_id}")
        return env_spec

    def load_env_creator(name: str) -> Callable[..., Any]:
        mod_name, attr_name = name.split(":")
        mod = importlib.import_module(mod_name)
        return getattr(mod, attr_name)

    def make(id: Any, max_episode_steps: Optional[int] = None, disable_env_checker: Optional[bool] = None, **kwargs: Any) -> Env:
        if isinstance(id, EnvSpec):
            env_spec = id
        else:
            if not isinstance(id, str):
                raise TypeError(f"Expected id to be a string or EnvSpec, got {type(id)}")
            env_spec = registry.get(id)  # _find_spec, without "module:id" imports and version fallbacks
            if env_spec is None:
                raise Error(f"No registered env with id: {id}. Did you register it, or import the package that registers it?")
        env_spec_kwargs = copy.deepcopy(env_spec.kwargs)
        env_spec_kwargs.update(kwargs)
        if env_spec.entry_point is None:
            raise Error(f"{env_spec.id} registered but entry_point is not specified")
        env_creator = env_spec.entry_point if callable(env_spec.entry_point) else load_env_creator(env_spec.entry_point)
        render_modes = None
        if hasattr(env_creator, "metadata"):
            metadata = env_creator.metadata  # _check_metadata
            if not isinstance(metadata, dict):
                raise InvalidMetadata(f"Expect the environment metadata to be dict, actual type: {type(metadata)}")
            render_modes = metadata.get("render_modes")
            if render_modes is None:
                logger.warn(f"The environment creator metadata doesn't include `render_modes`, contains: {list(metadata.keys())}")
        render_mode = env_spec_kwargs.get("render_mode")
        if render_mode is not None and render_modes is not None and render_mode not in render_modes:
            logger.warn(f"The environment is being initialised with render_mode={render_mode!r} that is not in the possible render_modes ({render_modes}).")
        try:
            env = env_creator(**env_spec_kwargs)
        except TypeError as e:
            raise type(e)(f"{e} was raised from the environment creator for {env_spec.id} with kwargs ({env_spec_kwargs})") from e
        if not isinstance(env, Env):
            raise TypeError(f"The environment must inherit from the gymnasium.Env class, actual class: {type(env)}.")
        env.unwrapped.spec = EnvSpec(id=env_spec.id, entry_point=env_spec.entry_point, reward_threshold=env_spec.reward_threshold,
                                     nondeterministic=env_spec.nondeterministic, max_episode_steps=None, order_enforce=False,
                                     disable_env_checker=True, kwargs=env_spec_kwargs, additional_wrappers=(),
                                     vector_entry_point=env_spec.vector_entry_point)
        assert env.spec is not None
        if disable_env_checker is False or (disable_env_checker is None and env_spec.disable_env_checker is False):
            env = PassiveEnvChecker(env)
        if env_spec.order_enforce:
            env = OrderEnforcing(env)
        if max_episode_steps != -1:
            if max_episode_steps is not None:
                env = TimeLimit(env, max_episode_steps)
            elif env_spec.max_episode_steps is not None:
                env = TimeLimit(env, env_spec.max_episode_steps)
        for wrapper_spec in env_spec.additional_wrappers:
            if wrapper_spec.kwargs is None:
                raise ValueError(f"{wrapper_spec.name} wrapper does not inherit from `gymnasium.utils.RecordConstructorArgs`, therefore, the wrapper cannot be recreated.")
            env = load_env_creator(wrapper_spec.entry_point)(env=env, **wrapper_spec.kwargs)
        return env

    for name, value in {"EnvSpec": EnvSpec, "WrapperSpec": WrapperSpec, "registry": registry, "register": register, "make": make,
                        "spec": spec, "parse_env_id": parse_env_id, "load_env_creator": load_env_creator}.items():
        setattr(registration, name, value)
    envs.registration = registration
    envs.registry = registry

    # -- gymnasium/__init__.py --
    for name, value in {"Env": Env, "Wrapper": Wrapper, "Space": Space, "make": make, "spec": spec, "register": register,
                        "registry": registry, "spaces": spaces, "utils": utils, "wrappers": wrappers, "error": error,
                        "logger": logger, "envs": envs, "__version__": "1.4.0 (stand-in of " + UPSTREAM_COMMIT[:8] + ")"}.items():
        setattr(gym, name, value)
    Env.__module__ = Wrapper.__module__ = "gymnasium.core"
    return {m.__name__: m for m in (gym, error, logger, spaces, utils, seeding, env_checker, passive, wrappers, envs, registration)}


def patched_gymnasium() -> "mock._patch_dict":
    """``with patched_gymnasium() as modules:``: a fresh stand-in in ``sys.modules`` for the block."""
    return mock.patch.dict(sys.modules, fake_gymnasium())


# ----- tests of the stand-in itself: it enforces the rules the adapter is tested against -----------------


def toy_class(gym: Any, *, obs: str = "ok", call_super_reset: bool = True, counting_info: bool = False,
              metadata: Optional[Dict[str, Any]] = None, episode_key: Optional[str] = None, end_after: int = 3) -> type:
    """A small text environment with one switchable fault each."""

    class Toy(gym.Env):
        def __init__(self, render_mode: Optional[str] = None, lock: Any = None):
            self.render_mode = render_mode
            self.observation_space = gym.spaces.Text(max_length=8, min_length=0, charset="abcdefghijklmnopqrstuvwxyz")
            self.action_space = gym.spaces.Text(max_length=4, min_length=0, charset="xyz")
            self.steps = 0
            self.calls = 0
            self.closed = 0

        def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Any:
            if call_super_reset:
                super().reset(seed=seed)
            self.steps = 0
            return obs, {}

        def step(self, action: Any) -> Any:
            self.steps += 1
            self.calls += 1
            info: Dict[str, Any] = {"calls": self.calls} if counting_info else {}
            done = self.steps >= end_after
            if done and episode_key:
                info[episode_key] = {"summary": True}
            return obs, 1.0, done, False, info

        def render(self) -> Any:
            return obs if self.render_mode == "ansi" else None

        def close(self) -> None:
            self.closed += 1

    Toy.metadata = metadata if metadata is not None else {"render_modes": ["ansi"], "render_fps": 4}
    return Toy


class StandInTest(unittest.TestCase):
    """The stand-in is faithful where the adapter's tests rely on it: each rule fails a toy environment
    that breaks it."""

    def setUp(self) -> None:
        patcher = patched_gymnasium()
        patcher.start()
        self.addCleanup(patcher.stop)
        self.gym = sys.modules["gymnasium"]
        self.check_env = sys.modules["gymnasium.utils.env_checker"].check_env
        self.warnings: List[str] = self.gym.logger.messages

    def make_registered(self, toy: type, **kwargs: Any) -> Any:
        self.gym.register(id="toy/Toy-v0", entry_point=toy, max_episode_steps=5)
        return self.gym.make("toy/Toy-v0", **kwargs)

    def test_text_space_sampling_and_contains(self) -> None:
        # gymnasium/spaces/text.py Text.sample: length uniform in [min_length, max_length], characters from the charset.
        space = self.gym.spaces.Text(max_length=50, min_length=3, charset="ab€")
        space.seed(7)
        samples = [space.sample() for _ in range(400)]
        self.assertTrue(all(3 <= len(s) <= 50 and set(s) <= {"a", "b", "€"} for s in samples))
        self.assertEqual({len(s) for s in samples} >= {3, 50}, True)  # both bounds are reached
        self.assertAlmostEqual(sum(map(len, samples)) / len(samples), 26.5, delta=3)
        space.seed(7)
        self.assertEqual(space.sample(), samples[0])
        self.assertIn("ab€", space)
        self.assertNotIn("abc", space)
        self.assertNotIn("ab", space)
        with self.assertRaises(ValueError):
            self.gym.spaces.Text(max_length=2, min_length=3)

    def test_check_env_accepts_a_correct_env_without_warnings(self) -> None:
        env = self.make_registered(toy_class(self.gym))
        self.check_env(env.unwrapped)
        self.assertEqual(self.warnings, [])

    def test_check_env_rejects_an_observation_outside_the_space(self) -> None:
        # env_checker.check_reset_return_type
        with self.assertRaisesRegex(AssertionError, "not within the observation space"):
            self.check_env(toy_class(self.gym, obs="NOT-IN")())

    def test_check_env_rejects_a_reset_that_does_not_seed(self) -> None:
        # env_checker.check_reset_seed_determinism
        with self.assertRaisesRegex(AssertionError, "super\\(\\).reset\\(seed=seed\\)"):
            self.check_env(toy_class(self.gym, call_super_reset=False)())

    def test_check_env_rejects_nondeterministic_step_info(self) -> None:
        # env_checker.check_step_determinism
        with self.assertRaisesRegex(AssertionError, "Deterministic step info"):
            self.check_env(toy_class(self.gym, counting_info=True)())

    def test_check_env_warns_without_render_fps_or_spec(self) -> None:
        # passive_env_checker.env_render_passive_checker; check_env's render-mode loop needs a spec
        self.check_env(toy_class(self.gym, metadata={"render_modes": ["ansi"]})(render_mode="ansi"))
        self.assertTrue(any("No render fps" in w for w in self.warnings), self.warnings)
        self.assertTrue(any("not having a spec" in w for w in self.warnings), self.warnings)

    def test_record_episode_statistics_refuses_an_episode_key(self) -> None:
        # wrappers/common.py RecordEpisodeStatistics.step: assert self._stats_key not in info
        env = self.gym.wrappers.RecordEpisodeStatistics(self.make_registered(toy_class(self.gym, episode_key="episode")))
        env.reset(seed=0)
        env.step("x")
        env.step("x")
        with self.assertRaises(AssertionError):
            env.step("x")
        ok = self.gym.wrappers.RecordEpisodeStatistics(toy_class(self.gym, episode_key="llmix_episode")())
        ok.reset()
        for _ in range(3):
            *_, info = ok.step("x")
        self.assertEqual(info["episode"]["l"], 3)
        self.assertEqual(info["llmix_episode"], {"summary": True})

    def test_make_stack_time_limit_and_order_enforcing(self) -> None:
        # registration.make: PassiveEnvChecker, then OrderEnforcing, then TimeLimit(max_episode_steps)
        env = self.make_registered(toy_class(self.gym, end_after=100))
        self.assertEqual([type(e).__name__ for e in (env, env.env, env.env.env)], ["TimeLimit", "OrderEnforcing", "PassiveEnvChecker"])
        with self.assertRaises(self.gym.error.ResetNeeded):
            env.step("x")
        env.reset()
        truncated = [env.step("x")[3] for _ in range(5)]
        self.assertEqual(truncated, [False, False, False, False, True])
        self.assertEqual(env.spec.max_episode_steps, 5)
        self.assertEqual(env.unwrapped.spec.id, "toy/Toy-v0")

    def test_spec_kwargs_must_deep_copy(self) -> None:
        # registration.make deep-copies the registered kwargs; Wrapper.spec deep-copies the spec.
        toy = toy_class(self.gym)
        self.gym.register(id="toy/Locked-v0", entry_point=toy, kwargs={"lock": threading.Lock()})
        with self.assertRaises(TypeError):
            self.gym.make("toy/Locked-v0")
        env = self.make_registered(toy, lock=threading.Lock())  # make kwargs are not copied, but the spec is
        self.assertIsNone(env.spec)
        self.assertTrue(any("while copying the environment spec" in w for w in self.warnings), self.warnings)

    def test_registered_ids_and_json(self) -> None:
        # registration.register / parse_env_id / EnvSpec.to_json
        self.gym.register(id="llmix/some-env-v0", entry_point="nowhere:Nothing", kwargs={"a": [1]})
        spec = self.gym.spec("llmix/some-env-v0")
        self.assertEqual((spec.namespace, spec.name, spec.version), ("llmix", "some-env", 0))
        self.assertEqual(json.loads(spec.to_json())["kwargs"], {"a": [1]})
        with self.assertRaises(self.gym.error.Error):
            self.gym.register(id="bad id!", entry_point="x:y")
        with self.assertRaises(self.gym.error.RegistrationError):
            self.gym.register(id="llmix/some-env", entry_point="x:y")


if __name__ == "__main__":
    unittest.main()
