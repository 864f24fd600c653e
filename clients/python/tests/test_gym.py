"""The Gymnasium adapter against a real ``llmix serve``.

gymnasium is not installed here (PyPI is unreachable): the tests run the adapter against the stand-in of
``test_gym_standin.fake_gymnasium`` (gymnasium's ``check_env``, passive checker, ``make`` / ``register``,
``TimeLimit``, ``OrderEnforcing``, ``RecordEpisodeStatistics`` and ``spaces.Text``, copied from the
upstream source at the commit named there), put in ``sys.modules`` for each test. Each test names the
upstream function whose rule it exercises.
"""
from __future__ import annotations

import copy
import json
import os
import pickle
import sys
import unittest
from typing import Any, List
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_support, however the tests are run
from test_support import ServerTestCase, ENV, REFERENCE_TASK, Server
from test_gym_standin import patched_gymnasium

from llmix_client import Client, LifecycleError, NotFoundError, ValidationError
from llmix_client import gym as llmix_gym
from llmix_client.gym import (
    CUT_MARKER,
    DEFAULT_BODY_LIMIT,
    EPISODE_INFO_KEY,
    MAX_BYTES_PER_CHAR,
    TEXT_CHARSET,
    LlmixEnv,
    action_text_limit,
    fit_observation,
    make_gym_env,
    parse_action,
    register_envs,
)

GYM_ID = f"llmix/{ENV}-v0"


def step_body_bytes(action: Any) -> int:
    """The size of the step request the client sends for ``action`` (Client.request's encoding)."""
    return len(json.dumps({"action": parse_action(action)}, separators=(",", ":")).encode("utf-8"))


class GymTest(ServerTestCase):
    """The adapter with the stand-in gymnasium (fresh for each test) and the default body limit."""

    def setUp(self) -> None:
        patcher = patched_gymnasium()
        patcher.start()
        self.addCleanup(patcher.stop)
        self.gym = sys.modules["gymnasium"]
        self.check_env = sys.modules["gymnasium.utils.env_checker"].check_env
        self.warnings: List[str] = self.gym.logger.messages
        # register_envs shares its client by URL for the process: forget it after each test.
        self.addCleanup(llmix_gym._SHARED_CLIENTS.clear)

    def make(self, **kwargs: Any) -> Any:
        if GYM_ID not in self.gym.registry:
            register_envs(self.client)
        env = self.gym.make(GYM_ID, **kwargs)
        self.addCleanup(env.close)
        return env

    # -- without gymnasium --

    def test_core_works_without_gymnasium(self) -> None:
        with mock.patch.dict(sys.modules, {"gymnasium": None}):  # `import gymnasium` raises ImportError
            with self.assertRaises(ImportError):
                make_gym_env(self.client, ENV)
            with self.assertRaises(ImportError):
                register_envs(self.client)
            env = LlmixEnv(self.client, ENV, task_ids=[REFERENCE_TASK], seed=1)
            text, info = env.reset()
            self.assertEqual(info["task_id"], REFERENCE_TASK)
            self.assertEqual(text, info["observation"]["rendered"])
            env.close()
            self.assertIsNone(env.session)

    # -- gymnasium/utils/env_checker.py check_env --

    def test_check_env_on_the_bare_env(self) -> None:
        # check_env (every check it runs) on make_gym_env's environment: no spec, so its only warning is
        # the one about alternative render modes it cannot test without one.
        env = make_gym_env(self.client, ENV, task_ids=[REFERENCE_TASK, self.ref["task_id"]], render_mode="ansi")
        self.addCleanup(env.close)
        self.check_env(env)
        self.assertEqual(self.warnings, ["Not able to test alternative render modes due to the environment not having a spec. "
                                         "Try instantiating the environment through `gymnasium.make`"])

    def test_check_env_through_make(self) -> None:
        # check_env on gymnasium.make's environment: with a spec (nondeterministic=False) it also compares
        # seeded resets and steps, re-makes the env from env.spec for each render mode and closes it twice.
        env = self.make(difficulty="easy", split="train")
        self.check_env(env.unwrapped)
        self.assertEqual(self.warnings, [])
        self.check_env(env)  # the wrapped stack: only the wrapped-env warning
        self.assertEqual(len(self.warnings), 1)
        self.assertIn("is different from the unwrapped version", self.warnings[0])

    # -- gymnasium/spaces/text.py Text; the service's --body-limit (src/server/app.ts DEFAULT_BODY_LIMIT) --

    def test_spaces(self) -> None:
        env = make_gym_env(self.client, ENV, task_ids=[REFERENCE_TASK])
        self.addCleanup(env.close)
        Text = self.gym.spaces.Text
        self.assertEqual(env.action_space, Text(max_length=action_text_limit(DEFAULT_BODY_LIMIT), min_length=0, charset=TEXT_CHARSET))
        self.assertEqual(env.observation_space, Text(max_length=llmix_gym.MAX_OBSERVATION_LENGTH, min_length=0, charset=TEXT_CHARSET))
        self.assertEqual(env.action_space.max_length, 174_752)
        # Gymnasium's Text repr lists the whole charset; ours names it.
        self.assertLess(len(repr(env.observation_space)), 120, repr(env.observation_space))
        self.assertIn("TEXT_CHARSET", repr(env.action_space))
        self.assertIsInstance(env.action_space, Text)
        restored = pickle.loads(pickle.dumps(env.action_space))  # (the stand-in's np_random cannot be pickled: unseeded)
        self.assertEqual(restored, env.action_space)
        self.assertEqual(repr(restored), repr(env.action_space))
        restored.seed(5)
        env.action_space.seed(5)
        self.assertEqual(restored.sample(), env.action_space.sample())
        # The worst text of the action space (every character a \uXXXX escape) fits the body limit.
        worst = "€" * env.action_space.max_length
        self.assertLessEqual(step_body_bytes(worst), DEFAULT_BODY_LIMIT)
        self.assertGreater(step_body_bytes(worst + "€" * 12), DEFAULT_BODY_LIMIT - 64)  # and the bound is tight
        self.assertTrue(all(ord(c) <= 0xFFFF for c in TEXT_CHARSET))  # so no character takes more than 6 bytes
        self.assertEqual(env.metadata, {"render_modes": ["ansi"], "render_fps": llmix_gym.RENDER_FPS})

    def test_sampled_actions_are_answered_by_the_environment(self) -> None:
        # check_env steps with env.action_space.sample(): every sample must reach the environment and be
        # answered as an invalid action, never refused by the service or the transport.
        env = make_gym_env(self.client, ENV, task_ids=[REFERENCE_TASK])
        self.addCleanup(env.close)
        env.reset(seed=0)
        env.action_space.seed(3)
        samples = [env.action_space.sample() for _ in range(6)] + ["€" * env.action_space.max_length, ""]
        self.assertTrue(any(len(s) > 100_000 for s in samples))
        for action in samples:
            self.assertIn(action, env.action_space)
            self.assertLessEqual(step_body_bytes(action), DEFAULT_BODY_LIMIT)
            obs, reward, terminated, truncated, info = env.step(action)
            self.assertEqual(info["error"]["code"], "invalid_action")
            self.assertLess(info["reward_components"]["invalid_call"], 0.0)
            self.assertIn(obs, env.observation_space)
            self.assertFalse(terminated or truncated)
        # Beyond the space the service's limit applies: a typed error, not a broken pipe.
        with self.assertRaises(ValidationError) as caught:
            env.step("€" * (DEFAULT_BODY_LIMIT // MAX_BYTES_PER_CHAR + 10))
        self.assertEqual(caught.exception.code, "payload_too_large")

    def test_space_arguments(self) -> None:
        env = make_gym_env(self.client, ENV, task_ids=[REFERENCE_TASK], body_limit=65_536, max_observation_length=10_000)
        self.addCleanup(env.close)
        self.assertEqual(env.action_space.max_length, (65_536 - 64) // 6)
        self.assertEqual(env.observation_space.max_length, 10_000)
        self.assertEqual(make_gym_env(self.client, ENV, max_action_length=2048).action_space.max_length, 2048)
        for bad in ({"max_action_length": action_text_limit() + 1}, {"body_limit": 10}, {"max_action_length": -1},
                    {"max_observation_length": 5}, {"render_mode": "human"}):
            with self.assertRaises(ValueError, msg=bad):
                make_gym_env(self.client, ENV, **bad)
        with self.assertRaisesRegex(TypeError, "unknown argument"):
            make_gym_env(self.client, ENV, difficulty_level="easy")
        with self.assertRaises(TypeError):
            make_gym_env(42, ENV)
        with self.assertRaises(TypeError):
            make_gym_env(self.client, ENV, task_ids=REFERENCE_TASK)  # one string, not a list

    def test_fit_observation(self) -> None:
        self.assertEqual(fit_observation("Refund: 12 € — ok\n"), "Refund: 12 € — ok\n")
        escaped = fit_observation("naïve 日本 🙂 \x00 \ud800")
        self.assertEqual(escaped, "naïve \\u65e5\\u672c \\ud83d\\ude42 \\u0000 \\ud800")
        self.assertEqual(json.loads('"' + escaped.replace("\\ud800", "") + '"'), "naïve 日本 🙂 \x00 ")
        cut = fit_observation("x" * 5000, max_length=1000)
        self.assertEqual(len(cut), 1000)
        self.assertTrue(cut.endswith(CUT_MARKER))
        env = make_gym_env(self.client, ENV, task_ids=[REFERENCE_TASK], max_observation_length=len(CUT_MARKER) + 10)
        self.addCleanup(env.close)
        obs, info = env.reset()
        self.assertIn(obs, env.observation_space)
        self.assertTrue(obs.endswith(CUT_MARKER))
        self.assertTrue(info["observation"]["rendered"].startswith(obs[:10]))  # the full text stays in info

    # -- gymnasium/envs/registration.py register / make / EnvSpec; wrappers/common.py --

    def test_register_envs(self) -> None:
        ids = register_envs(self.client)
        self.assertEqual(ids, [f"llmix/{e['id']}-v0" for e in self.client.envs()])
        spec = self.gym.spec(GYM_ID)
        self.assertEqual(spec.entry_point, "llmix_client.gym:LlmixGymEnv")
        self.assertEqual(spec.max_episode_steps, self.client.env(ENV)["max_steps"])
        self.assertIs(spec.nondeterministic, False)
        self.assertEqual(spec.kwargs, {"client": self.client.base_url, "env_id": ENV})
        json.loads(spec.to_json())  # EnvSpec.to_json: plain values only
        # Explicit ids, another namespace and version, defaults for make.
        self.assertEqual(register_envs(self.server.url, [ENV], namespace="lab", version=2, difficulty="easy"), [f"lab/{ENV}-v2"])
        self.assertEqual(self.gym.spec(f"lab/{ENV}-v2").kwargs["difficulty"], "easy")
        with self.assertRaises(NotFoundError) as caught:
            register_envs(self.client, ["no-such-env"])
        self.assertEqual(caught.exception.code, "unknown_env")
        with self.assertRaisesRegex(TypeError, "unknown argument"):
            register_envs(self.client, difficullty="easy")
        with self.assertRaises(TypeError):
            register_envs(self.client, task_ids={"a", "b"})  # not JSON: EnvSpec.to_json could not write it
        with self.assertRaises(ValueError):
            register_envs(self.client, max_action_length=10**9)
        with self.assertRaises(ValueError):
            register_envs(self.client, namespace="a/b")

    def test_make_sets_spec_and_wrappers(self) -> None:
        env = self.make(task_ids=[REFERENCE_TASK], render_mode="ansi")
        self.assertEqual([type(e).__name__ for e in (env, env.env, env.env.env, env.env.env.env)],
                         ["TimeLimit", "OrderEnforcing", "PassiveEnvChecker", "LlmixGymEnv"])
        self.assertEqual(env.spec.id, GYM_ID)
        self.assertEqual(env.spec.max_episode_steps, 36)
        self.assertEqual(env.unwrapped.spec.kwargs["task_ids"], [REFERENCE_TASK])
        self.assertIs(env.unwrapped.client, self.client)  # the client register_envs shared for its URL
        self.assertEqual(str(env.unwrapped), f"<LlmixGymEnv<{GYM_ID}>>")
        with self.assertRaises(self.gym.error.ResetNeeded):  # OrderEnforcing
            env.step({"type": "message", "content": "hi"})
        with self.assertRaises(self.gym.error.ResetNeeded):
            env.render()
        obs, info = env.reset(seed=4)
        self.assertEqual(env.render(), info["observation"]["rendered"])
        # The spec's kwargs can be deep-copied and pickled (vector envs, EnvSpec.make in another process).
        self.assertEqual(pickle.loads(pickle.dumps(env.spec.kwargs)), copy.deepcopy(env.spec).kwargs)
        self.assertIs(pickle.loads(pickle.dumps(type(env.unwrapped))), type(env.unwrapped))  # by reference
        again = env.spec.make()
        self.addCleanup(again.close)
        self.assertEqual(again.reset(seed=4)[0], obs)

    def test_make_with_a_client_object(self) -> None:
        # make(id, client=c): the spec would hold an object that cannot be deep-copied (Wrapper.spec
        # would warn and give None); the adapter keeps its URL in the spec instead.
        register_envs(self.server.url)
        llmix_gym._SHARED_CLIENTS.clear()
        other = Client(self.server.url, timeout=12)
        self.addCleanup(other.close)
        env = self.gym.make(GYM_ID, client=other, task_ids=[REFERENCE_TASK])
        self.addCleanup(env.close)
        self.assertIs(env.unwrapped.client, other)
        self.assertEqual(env.spec.kwargs["client"], self.server.url)
        again = env.spec.make()
        self.addCleanup(again.close)
        self.assertIs(again.unwrapped.client, other)
        self.assertEqual(self.warnings, [])
        # Made from a URL nobody shared, the environment owns (and closes) its own client.
        llmix_gym._SHARED_CLIENTS.clear()
        own = self.gym.make(GYM_ID, task_ids=[REFERENCE_TASK])
        self.assertIsNot(own.unwrapped.client, other)
        own.reset()
        own.close()
        own.close()  # PassiveEnvChecker.close: a second close must not raise

    def test_reference_episode_with_record_episode_statistics(self) -> None:
        # wrappers/common.py RecordEpisodeStatistics.step asserts "episode" is not in info.
        env = self.gym.wrappers.RecordEpisodeStatistics(self.make())
        text, info = env.reset(options={"task_id": self.ref["task_id"], "seed": self.ref["seed"]})
        self.assertEqual(text, self.ref["observations"][0])
        total = 0.0
        for i, action in enumerate(self.ref["actions"]):
            # Alternate the two action forms: a dict and its JSON string.
            obs, reward, terminated, truncated, step_info = env.step(action if i % 2 else json.dumps(action))
            total += reward
        self.assertTrue(terminated)
        self.assertFalse(truncated)
        self.assertEqual(step_info["outcome"], 1.0)
        self.assertEqual(step_info[EPISODE_INFO_KEY]["outcome"], 1.0)
        self.assertAlmostEqual(step_info[EPISODE_INFO_KEY]["total_reward"], total, places=6)
        self.assertEqual(step_info["episode"]["l"], len(self.ref["actions"]))  # the wrapper's own statistics
        self.assertAlmostEqual(step_info["episode"]["r"], total, places=6)
        self.assertIsNone(env.unwrapped.session)  # closed when the episode ended
        with self.assertRaises(LifecycleError) as caught:
            env.step({"type": "message", "content": "still there?"})
        self.assertEqual(caught.exception.code, "episode_ended")
        # A second episode through the same wrapper.
        env.reset(seed=1)
        self.assertEqual(env.episode_count, 1)

    def test_time_limit(self) -> None:
        # wrappers/common.py TimeLimit: make(id, max_episode_steps=2) truncates at the second step; the
        # session cut short is closed by the next reset.
        env = self.make(max_episode_steps=2, task_ids=[REFERENCE_TASK])
        env.reset(seed=0)
        self.assertFalse(env.step({"type": "message", "content": "Hello"})[3])
        *_, truncated, info = env.step({"type": "message", "content": "Hello again"})
        self.assertTrue(truncated)
        self.assertNotIn(EPISODE_INFO_KEY, info)  # the environment itself has not ended the episode
        session = env.unwrapped.session
        env.reset(seed=0)
        self.assertTrue(session.closed)

    def test_seeded_resets_are_reproducible(self) -> None:
        env = make_gym_env(self.client, ENV, task_ids=[REFERENCE_TASK, self.ref["task_id"]], seed=5, render_mode="ansi")
        self.addCleanup(env.close)
        self.assertIsInstance(env, self.gym.Env)
        text, info = env.reset(seed=11)
        self.assertIsNotNone(env._np_random)  # gymnasium.Env.reset(seed=...) was called
        self.assertEqual(env.render(), text)
        again_text, again = env.reset(seed=11)
        self.assertEqual((again["task_id"], again["seed"], again_text), (info["task_id"], info["seed"], text))
        with self.assertRaisesRegex(ValueError, "unknown reset option"):
            env.reset(options={"task": REFERENCE_TASK})
        out = env.step(json.dumps({"type": "message", "content": "Hello, how can I help you today?"}))
        obs, reward, terminated, truncated, step_info = out
        self.assertIsInstance(reward, float)
        self.assertIs(terminated, False)
        self.assertIs(truncated, False)
        self.assertEqual(step_info["observation"]["rendered"], obs)
        session = env.session
        env.close()
        self.assertTrue(session.closed)

    def test_unparseable_action_is_an_invalid_call(self) -> None:
        env = LlmixEnv(self.client, ENV, task_ids=[REFERENCE_TASK])
        env.reset(seed=0)
        for bad in ("lookup_customer(query=ada)", "[1, 2]", None, {"type": "tool_call", "tool": "nope", "args": {}},
                    '{"type": "message", "content": NaN}', '{"a": 1e999}', "{}", ""):
            obs, reward, terminated, truncated, info = env.step(bad)
            self.assertFalse(terminated or truncated)
            self.assertLess(info["reward_components"]["invalid_call"], 0.0, bad)
            self.assertLess(reward, 0.0)
            self.assertTrue(obs)
        env.close()

    def test_sampled_pool(self) -> None:
        env = LlmixEnv(self.client, ENV, difficulty="easy", split="train", seed=3, task_pool_size=8)
        _, info = env.reset()
        self.assertIn("/easy/", info["task_id"])
        self.assertEqual(env._pool(), self.client.tasks(ENV, difficulty="easy", split="train", n=8, seed=3))
        with self.assertRaises(LifecycleError):
            LlmixEnv(self.client, ENV).step({"type": "message", "content": "hi"})  # before reset
        env.close()


class GymSmallBodyLimitTest(unittest.TestCase):
    """A service run with ``--body-limit 65536``: the action space sized with ``body_limit=65536`` still
    passes check_env, and its worst sample is answered by the environment."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(extra_args=["--body-limit", "65536"])
        cls.client = Client(cls.server.url, timeout=30)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.server.stop()

    def test_check_env_with_a_small_body_limit(self) -> None:
        with patched_gymnasium():
            gym = sys.modules["gymnasium"]
            try:
                register_envs(self.client, [ENV], body_limit=65_536)
                env = gym.make(GYM_ID)
                sys.modules["gymnasium.utils.env_checker"].check_env(env.unwrapped)
                self.assertEqual(gym.logger.messages, [])
                env.reset(seed=0)
                obs, reward, terminated, truncated, info = env.step("€" * env.action_space.max_length)
                self.assertEqual(info["error"]["code"], "invalid_action")
                env.close()
                # The default (1 MiB) space against this service: a sample can be refused.
                with self.assertRaises(ValidationError):
                    big = make_gym_env(self.client, ENV)
                    big.reset(seed=0)
                    try:
                        big.step("€" * big.action_space.max_length)
                    finally:
                        big.close()
            finally:
                llmix_gym._SHARED_CLIENTS.clear()


if __name__ == "__main__":
    unittest.main()
