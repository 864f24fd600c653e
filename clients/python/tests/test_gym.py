"""The Gymnasium adapter against a real ``llmix serve``. gymnasium is not installed here: the factory
is tested with a minimal stub module (``Env`` base class, ``spaces.Text``) put in ``sys.modules``."""
from __future__ import annotations

import json
import os
import sys
import types
import unittest
from typing import Any, Dict, Optional
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_support, however the tests are run
from test_support import ServerTestCase, ENV, REFERENCE_TASK, Server

from llmix_client import Client, LifecycleError
from llmix_client.gym import TEXT_CHARSET, LlmixEnv, make_gym_env


def stub_gymnasium() -> Dict[str, types.ModuleType]:
    """``gymnasium`` and ``gymnasium.spaces`` with just what the adapter uses."""
    gymnasium = types.ModuleType("gymnasium")
    spaces = types.ModuleType("gymnasium.spaces")

    class Env:
        metadata: Dict[str, Any] = {"render_modes": []}
        reset_seeds: list

        def reset(self, *, seed: Optional[int] = None, options: Any = None) -> None:
            self.__dict__.setdefault("reset_seeds", []).append(seed)

        def close(self) -> None:
            pass

    class Text:
        def __init__(self, max_length: int, *, min_length: int = 1, charset: Any = "abc", seed: Any = None):
            self.max_length, self.min_length, self.charset = max_length, min_length, frozenset(charset)

        def contains(self, x: Any) -> bool:
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length and all(c in self.charset for c in x)

    gymnasium.Env = Env  # type: ignore[attr-defined]
    spaces.Text = Text  # type: ignore[attr-defined]
    gymnasium.spaces = spaces  # type: ignore[attr-defined]
    return {"gymnasium": gymnasium, "gymnasium.spaces": spaces}


class GymTest(ServerTestCase):

    def test_core_works_without_gymnasium(self) -> None:
        with mock.patch.dict(sys.modules, {"gymnasium": None}):  # `import gymnasium` raises ImportError
            with self.assertRaises(ImportError):
                make_gym_env(self.client, ENV)
            env = LlmixEnv(self.client, ENV, task_ids=[REFERENCE_TASK], seed=1)
            text, info = env.reset()
            self.assertEqual(info["task_id"], REFERENCE_TASK)
            self.assertEqual(text, info["observation"]["rendered"])
            env.close()
            self.assertIsNone(env.session)

    def test_factory_with_stub_gymnasium(self) -> None:
        with mock.patch.dict(sys.modules, stub_gymnasium()):
            gymnasium = sys.modules["gymnasium"]
            env = make_gym_env(self.client, ENV, task_ids=[REFERENCE_TASK, self.ref["task_id"]], seed=5, render_mode="ansi")
            self.assertIsInstance(env, gymnasium.Env)  # type: ignore[attr-defined]
            self.assertEqual(type(env).__name__, "LlmixGymEnv")
            self.assertIsInstance(env.observation_space, gymnasium.spaces.Text)  # type: ignore[attr-defined]
            self.assertEqual(env.action_space.charset, frozenset(TEXT_CHARSET))
            text, info = env.reset(seed=11)
            self.assertEqual(env.reset_seeds, [11])  # gymnasium.Env.reset(seed=...) is called
            self.assertTrue(env.observation_space.contains(text))
            self.assertEqual(env.render(), text)
            # Seeded resets are reproducible: the same task and episode seed.
            again_text, again = env.reset(seed=11)
            self.assertEqual((again["task_id"], again["seed"]), (info["task_id"], info["seed"]))
            self.assertEqual(again_text, text)
            out = env.step(json.dumps({"type": "message", "content": "Hello, how can I help you today?"}))
            self.assertEqual(len(out), 5)
            obs, reward, terminated, truncated, step_info = out
            self.assertIsInstance(obs, str)
            self.assertIsInstance(reward, float)
            self.assertIs(terminated, False)
            self.assertIs(truncated, False)
            self.assertIn("reward_components", step_info)
            session = env.session
            env.close()
            self.assertTrue(session.closed)

    def test_reference_episode_through_gym(self) -> None:
        with mock.patch.dict(sys.modules, stub_gymnasium()):
            env = make_gym_env(self.client, ENV)
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
            self.assertEqual(step_info["episode"]["outcome"], 1.0)
            self.assertAlmostEqual(step_info["episode"]["total_reward"], total, places=6)
            self.assertIsNone(env.session)  # closed when the episode ended
            with self.assertRaises(LifecycleError) as caught:
                env.step({"type": "message", "content": "still there?"})
            self.assertEqual(caught.exception.code, "episode_ended")

    def test_unparseable_action_is_an_invalid_call(self) -> None:
        env = LlmixEnv(self.client, ENV, task_ids=[REFERENCE_TASK])
        env.reset(seed=0)
        for bad in ("lookup_customer(query=ada)", "[1, 2]", None, {"type": "tool_call", "tool": "nope", "args": {}}):
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


if __name__ == "__main__":
    unittest.main()
