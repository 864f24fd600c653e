"""The TRL ``environment_factory`` adapter against a real ``llmix serve`` (trl is not installed: the
tests drive the class the way GRPOTrainer does: no-argument construction, ``reset(**row)``, public
methods as tools, ``get_reward()`` as the environment's reward). ``test_trl_contract.py`` has stand-ins
of both trainer contracts (TRL <= 1.7 and >= 1.8) for the reward wiring."""
from __future__ import annotations

import inspect
import os
import re
import sys
import typing
import unittest
from typing import Any, Dict, List, Optional, Union

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_support, however the tests are run
from test_support import ServerTestCase, ENV, REFERENCE_TASK, Server

from llmix_client import Client, NotFoundError
from llmix_client.trl import close_all, environment_factory, python_type, tool_method

# The Google-style "Args:" parsing of transformers' get_json_schema (which TRL uses to build tool schemas).
ARGS_RE = re.compile(r"\n\s*Args:\n\s*(.*?)[\n\s]*(Returns:|Raises:|\Z)", re.DOTALL)
ARG_SPLIT_RE = re.compile(r"(?:^|\n)\s*(\w+):\s*(.*?)\s*(?=\n\s*\w+:|\Z)", re.DOTALL)


def trl_tools(instance: Any) -> Dict[str, Any]:
    """What GRPOTrainer (TRL >= 1.8, ``GRPOTrainer._generate_and_score_completions`` at huggingface/trl
    f2cd577) exposes as tools: every public bound method except ``reset`` and ``get_reward``."""
    return {name: member for name, member in inspect.getmembers(instance, predicate=inspect.ismethod)
            if name not in ("reset", "get_reward") and not name.startswith("_")}


def documented_args(method: Any) -> Dict[str, str]:
    match = ARGS_RE.search(inspect.getdoc(method) or "")
    return dict(ARG_SPLIT_RE.findall(match.group(1))) if match else {}


class SchemaTypesTest(unittest.TestCase):
    def test_python_type(self) -> None:
        cases = [
            ({"type": "string"}, (str, False)),
            ({"type": "integer"}, (int, False)),
            ({"type": "number"}, (float, False)),
            ({"type": "boolean"}, (bool, False)),
            ({"type": "object"}, (dict, False)),
            ({"type": "array"}, (list, False)),
            ({"type": "array", "items": {"type": "string"}}, (List[str], False)),
            ({"type": ["string", "null"]}, (str, True)),
            ({"anyOf": [{"type": "string", "pattern": "^\\d{4}$"}, {"type": "null"}]}, (str, True)),
            ({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}, (int, True)),
            ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, (Union[str, int], False)),
            ({"enum": ["a", "b"]}, (str, False)),
            ({"enum": ["a", None]}, (str, True)),
            ({}, (Any, False)),
        ]
        for schema, expected in cases:
            self.assertEqual(python_type(schema), expected, schema)

    def test_tool_method_names_keywords_and_defaults(self) -> None:
        method = tool_method({"name": "odd", "description": "Odd names.\nTwo lines.", "parameters": {
            "type": "object",
            "properties": {"from": {"type": "string", "description": "Sender"}, "max-n": {"type": "integer"},
                           "maybe": {"type": ["boolean", "null"]}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["from", "maybe"]}})
        sig = inspect.signature(method)
        self.assertEqual(list(sig.parameters), ["self", "from_", "max_n", "maybe", "tags"])
        self.assertIs(sig.parameters["from_"].default, inspect.Parameter.empty)
        self.assertIsNone(sig.parameters["max_n"].default)
        self.assertEqual(sig.parameters["max_n"].annotation, Optional[int])
        self.assertEqual(sig.parameters["maybe"].annotation, Optional[bool])
        self.assertEqual(sig.parameters["tags"].annotation, Optional[List[str]])
        self.assertTrue(all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(sig.parameters.values())[1:]))
        self.assertEqual(method.__doc__.splitlines()[0], "Odd names. Two lines.")
        self.assertEqual(documented_args(method), {"from_": "Sender", "max_n": "The max-n argument.",
                                                   "maybe": "The maybe argument.", "tags": "The tags argument."})

        calls: List[Any] = []

        class Fake:
            def _call_tool(self, name: str, args: Dict[str, Any]) -> str:
                calls.append((name, args))
                return "ok"

        self.assertEqual(method(Fake(), from_="me"), "ok")
        # The required nullable one is sent as null; optional ones not passed are left out.
        self.assertEqual(calls[-1], ("odd", {"from": "me", "maybe": None}))
        method(Fake(), from_="me", maybe=True, tags=["x"], max_n=None)
        self.assertEqual(calls[-1], ("odd", {"from": "me", "maybe": True, "tags": ["x"], "max-n": None}))
        with self.assertRaises(TypeError):
            method(Fake(), maybe=True)  # from_ missing
        with self.assertRaises(TypeError):
            method(Fake(), from_="me", bogus=1)


class TrlFactoryTest(ServerTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.Env = environment_factory(cls.client, ENV, task_ids=[REFERENCE_TASK], seed=4, owns_reward=True)
        cls.spec = cls.client.env(ENV)

    def row(self, **extra: Any) -> Dict[str, Any]:
        """A trl-grpo export row (the columns GRPOTrainer passes to reset)."""
        row = {"prompt": [{"role": "user", "content": "Handle the chat."}], "env": ENV, "task_id": self.ref["task_id"],
               "seed": self.ref["seed"], "difficulty": "medium", "env_version": "1.0.0"}
        row.update(extra)
        return row

    def test_one_method_per_tool(self) -> None:
        self.assertEqual(self.Env.__name__, "BillingDisputeEnv")
        env = self.Env()  # TRL constructs with no arguments
        tools = trl_tools(env)
        names = {t["name"] for t in self.spec["tools"]}
        self.assertEqual(set(tools), names | {"send_message"})  # get_reward is the reward hook, not a tool
        self.assertTrue(self.Env.owns_reward)
        for tool in self.spec["tools"]:
            method = tools[tool["name"]]
            self.assertEqual(method.__name__, tool["name"])
            props = tool["parameters"].get("properties", {})
            sig = inspect.signature(method)  # bound: no self
            self.assertEqual(list(sig.parameters), list(props))
            self.assertIs(sig.return_annotation, str)
            hints = typing.get_type_hints(method)
            self.assertIs(hints.pop("return"), str)
            self.assertEqual(set(hints), set(props))
            doc = inspect.getdoc(method) or ""
            self.assertTrue(doc.startswith(" ".join(tool["description"].split())), doc)
            self.assertTrue(doc.endswith("Returns:\n    The tool's result as text."), doc)
            self.assertEqual(set(documented_args(method)), set(props), doc)

    def test_billing_dispute_signatures(self) -> None:
        env = self.Env()
        sig = inspect.signature(env.verify_identity)
        self.assertEqual(list(sig.parameters), ["customer_id", "email", "card_last4", "postal_code"])
        self.assertEqual(typing.get_type_hints(env.verify_identity),
                         {"customer_id": str, "email": str, "card_last4": Optional[str], "postal_code": Optional[str], "return": str})
        self.assertIs(sig.parameters["customer_id"].default, inspect.Parameter.empty)
        self.assertIsNone(sig.parameters["card_last4"].default)
        self.assertIs(typing.get_type_hints(env.issue_refund)["amount_cents"], int)
        self.assertEqual(typing.get_type_hints(env.escalate_to_human)["amount_cents"], Optional[int])
        args = documented_args(env.verify_identity)
        self.assertEqual(args["email"], "The email address the customer told you")
        self.assertEqual(args["card_last4"], "Last 4 card digits the customer told you, or null")
        self.assertEqual(documented_args(env.escalate_to_human)["amount_cents"], "The amount due back in cents, or null")
        self.assertEqual(list(inspect.signature(env.get_agent_profile).parameters), [])
        self.assertNotIn("Args:", inspect.getdoc(env.get_agent_profile) or "")
        self.assertEqual(documented_args(env.send_message), {"content": "The text of the message."})
        self.assertEqual(typing.get_type_hints(env.send_message), {"content": str, "return": str})
        self.assertIs(typing.get_type_hints(env.get_reward)["return"], float)

    def test_reset_returns_the_prompt(self) -> None:
        env = self.Env()
        prompt = env.reset(**self.row())
        self.assertEqual(prompt, self.ref["observations"][0])
        self.assertEqual((env.task_id, env.seed), (self.ref["task_id"], self.ref["seed"]))
        # A trl-grpo row whose prompt already is the first observation: nothing to append.
        exported = self.row(prompt=[{"role": "user", "content": self.ref["observations"][0]}])
        self.assertIsNone(env.reset(**exported))
        # Without task_id/seed columns: the factory's task ids and a drawn seed.
        self.assertTrue(env.reset(prompt=[{"role": "user", "content": ""}]))
        self.assertEqual(env.task_id, REFERENCE_TASK)
        with self.assertRaises(ValueError):
            env.reset(**self.row(env="another-env"))
        close_all([env])

    def test_reference_episode_through_tools(self) -> None:
        env = self.Env()
        env.reset(**self.row())
        tools = trl_tools(env)
        previous = env.session_id
        for action in self.ref["actions"]:
            self.assertEqual(env.get_reward(), 0.0)  # not ended yet
            if action["type"] == "tool_call":
                text = tools[action["tool"]](**action["args"])
            else:
                text = tools["send_message"](content=action["content"])
            self.assertIsInstance(text, str)
        self.assertTrue(env.done)
        self.assertEqual(env.get_reward(), 1.0)
        self.assertEqual(env.reward, 1.0)
        self.assertEqual(env.episode["outcome"], 1.0)  # the summary; the session was closed at the end
        with self.assertRaises(NotFoundError):
            self.client.session_info(previous)
        with self.assertRaisesRegex(ValueError, "episode has ended"):
            env.send_message(content="anything else?")

        def reward_func(environments: List[Any], **kwargs: Any) -> List[float]:
            return [e.get_reward() for e in environments]

        self.assertEqual(reward_func([env]), [1.0])
        # Reused for the next rollout: a fresh episode, reward back to 0.
        env.reset(**self.row())
        self.assertFalse(env.done)
        self.assertEqual(env.get_reward(), 0.0)
        close_all([env])

    def test_tool_call_steps_the_session(self) -> None:
        env = self.Env()
        env.reset(**self.row())
        text = env.get_agent_profile()
        self.assertIn("tier", text.lower())
        info = self.client.session_info(env.session_id)
        self.assertEqual(info["steps"], 1)
        # A bad argument is answered by the environment (invalid call), as text.
        answer = env.issue_refund(customer_id="cus_x", charge_id="ch_x", amount_cents=-5, reason="test")
        self.assertIsInstance(answer, str)
        self.assertFalse(env.done)
        previous = env.session_id
        env.reset(**self.row())  # closes the previous episode's session
        with self.assertRaises(NotFoundError):
            self.client.session_info(previous)
        close_all([env])

    def test_name_collisions_are_refused(self) -> None:
        class FakeClient:
            base_url = "http://fake"

            def __init__(self, names: List[str]):
                self.names = names

            def env(self, env_id: str) -> Dict[str, Any]:
                return {"id": env_id, "version": "1.0.0", "tools": [{"name": n, "description": "", "parameters": {}} for n in self.names]}

        for bad in ("reset", "get_reward", "send_message", "owns_reward", "reward", "_private", "not-an-identifier", "class"):
            with self.assertRaises(ValueError, msg=bad):
                environment_factory(FakeClient([bad]), "x")  # type: ignore[arg-type]
        cls = environment_factory(FakeClient(["ping"]), "my_env-2")  # type: ignore[arg-type]
        self.assertEqual(cls.__name__, "MyEnv2Env")
        self.assertEqual(inspect.getdoc(cls.ping), "Call the ping tool.\n\nReturns:\n    The tool's result as text.")


if __name__ == "__main__":
    unittest.main()
