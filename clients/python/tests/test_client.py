"""Client and Session against a real ``llmix serve`` (see test_support), plus transport behaviour
(auth header, capacity retries, error mapping) against a small local stub server."""
from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_support, however the tests are run
from test_support import ServerTestCase, ENV, REFERENCE_TASK, REPO_ROOT, Server

from llmix_client import (
    AuthError,
    CapacityError,
    Client,
    ConnectionFailedError,
    FleetUnavailableError,
    LlmixError,
    NotFoundError,
    ServerError,
    SessionBusyError,
    StepConflictError,
    StepResult,
    StepTimeoutError,
    ValidationError,
    error_from_response,
)


class ServiceTest(ServerTestCase):

    # -- discovery --

    def test_health(self) -> None:
        health = self.client.health()
        self.assertEqual(health["status"], "ok")
        self.assertIsInstance(health["sessions"], int)

    def test_envs_and_env(self) -> None:
        envs = {e["id"]: e for e in self.client.envs()}
        self.assertIn(ENV, envs)
        entry = envs[ENV]
        for key in ("version", "description", "difficulties", "max_steps"):
            self.assertIn(key, entry)
        self.assertIn("easy", entry["difficulties"])
        spec = self.client.env(ENV)
        self.assertEqual(spec["id"], ENV)
        tools = {t["name"]: t for t in spec["tools"]}
        self.assertIn("lookup_customer", tools)
        self.assertEqual(tools["lookup_customer"]["parameters"]["type"], "object")
        self.assertIn(tools["issue_refund"]["effect"], ("read", "write"))
        self.assertIn("task", spec["reward_components"])

    def test_tasks(self) -> None:
        ids = self.client.tasks(ENV, n=5, seed=3)
        self.assertEqual(len(ids), 5)
        self.assertTrue(all(i.startswith(f"{ENV}/") for i in ids))
        self.assertEqual(ids, self.client.tasks(ENV, n=5, seed=3))
        easy = self.client.tasks(ENV, difficulty="easy", split="train", n=3)
        self.assertTrue(all("/easy/" in i for i in easy), easy)

    def test_sample_tasks(self) -> None:
        spec = {"kind": "curriculum", "cells": ["easy", "medium", "hard"], "min_results": 2}
        first = self.client.sample_tasks(ENV, 6, spec=spec, seed=3)
        self.assertEqual(len(first["task_ids"]), 6)
        self.assertEqual(set(first["weights"]), {f"{ENV}/easy", f"{ENV}/medium", f"{ENV}/hard"})
        results = [{"task_id": f"{ENV}/{d}/seed-{k}", "outcome": outcome}
                   for d, outcome in (("easy", 1), ("hard", 0)) for k in range(4)]
        results += [{"task_id": f"{ENV}/medium/seed-{k}", "outcome": k % 2} for k in range(4)]
        nxt = self.client.sample_tasks(ENV, 100, state=first["state"], results=results, step=1)
        self.assertEqual(nxt["pass_rates"], {f"{ENV}/easy": 1, f"{ENV}/medium": 0.5, f"{ENV}/hard": 0})
        self.assertGreater(sum("/medium/" in i for i in nxt["task_ids"]), 70)
        with self.assertRaises(ValueError):
            self.client.sample_tasks(ENV, 1)
        with self.assertRaises(ValidationError) as bad:
            self.client.sample_tasks(ENV, 1, spec={"kind": "bandit"})
        self.assertEqual(bad.exception.code, "invalid_argument")

    # -- the reference episode --

    def test_reference_episode_reaches_outcome_1(self) -> None:
        ref = self.ref
        session = self.client.create_session(ENV, ref["task_id"], ref["seed"], record=True)
        self.assertEqual(session.task_id, ref["task_id"])
        self.assertEqual(session.seed, ref["seed"])
        self.assertEqual(session.text, ref["observations"][0])
        self.assertTrue(session.tools)
        result = None
        for i, action in enumerate(ref["actions"]):
            self.assertFalse(session.done, f"ended early, before action {i}")
            if i > 0:
                # Deterministic: what the Python session sees is what the recorded episode saw.
                self.assertEqual(session.text, ref["observations"][i])
            if action["type"] == "tool_call":
                result = session.tool_call(action["tool"], **action["args"])
                self.assertIsNotNone(result.tool_result)
            else:
                result = session.message(action["content"])
            self.assertIsInstance(result, StepResult)
            self.assertAlmostEqual(result.reward, sum(result.reward_components.values()), places=9)
        assert result is not None
        self.assertTrue(result.done)
        self.assertTrue(result.terminated)
        self.assertFalse(result.truncated)
        self.assertEqual(result.reward_components["task"], 1.0)
        self.assertTrue(result.info["verdict"]["passed"])
        summary = session.close()
        self.assertEqual(summary["outcome"], 1.0)
        self.assertEqual(summary["reward_components"]["task"], 1.0)
        self.assertTrue(summary["verdict"]["passed"])
        self.assertEqual(session.close(), summary)  # idempotent, no request
        # Recorded: the episode is in the store under the session id, step for step.
        stored = self.client.episode(session.session_id)
        self.assertEqual(len(stored["steps"]), len(ref["actions"]))
        self.assertEqual(stored["episode"]["outcome"], 1.0)

    def test_reference_actions_fixture_agrees(self) -> None:
        fixture = REPO_ROOT / "test" / "fixtures" / "reference-actions.ts"
        if not fixture.exists():
            self.skipTest("test/fixtures/reference-actions.ts is not there")
        run = subprocess.run(["npx", "tsx", str(fixture), ENV, self.ref["task_id"], str(self.ref["seed"])], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout), self.ref["actions"])

    def test_stored_episode_and_replay(self) -> None:
        episode_id = self.ref["episode_id"]  # holds "/": the client URL-encodes it
        stored = self.client.episode(episode_id)
        self.assertEqual(stored["episode"]["episode_id"], episode_id)
        self.assertEqual(stored["episode"]["outcome"], 1.0)
        self.assertEqual([s["action"] for s in stored["steps"]], self.ref["actions"])
        report = self.client.replay(episode_id)
        self.assertTrue(report["matched"], report)

    # -- errors --

    def test_unknown_env(self) -> None:
        with self.assertRaises(NotFoundError) as caught:
            self.client.create_session("no-such-env", f"no-such-env/easy/seed-1", 0)
        self.assertEqual(caught.exception.code, "unknown_env")
        self.assertEqual(caught.exception.status, 404)
        with self.assertRaises(NotFoundError) as caught:
            self.client.env("no-such-env")
        self.assertEqual(caught.exception.code, "unknown_env")

    def test_malformed_task_id(self) -> None:
        with self.assertRaises(ValidationError) as caught:
            self.client.create_session(ENV, "not a task id", 0)
        self.assertEqual(caught.exception.code, "invalid_task_id")
        self.assertTrue(400 <= caught.exception.status < 500)

    def test_bad_action_is_answered_by_the_env(self) -> None:
        with self.client.create_session(ENV, REFERENCE_TASK, 1) as session:
            for bad in ({"type": "dance"}, {"type": "tool_call", "tool": "no_such_tool", "args": {}},
                        {"type": "tool_call", "tool": "lookup_customer", "args": {"query": 42}}, {"type": "invalid", "raw": "??"}):
                result = session.step(bad)
                self.assertFalse(result.done)
                self.assertLess(result.reward_components.get("invalid_call", 0.0), 0.0, bad)
                self.assertTrue(result.text)
            # Not an action object at all: the service refuses the request itself.
            with self.assertRaises(ValidationError) as caught:
                session.step("not an action")
            self.assertEqual(caught.exception.code, "invalid_action")
            self.assertEqual(caught.exception.status, 400)

    def test_payload_too_large(self) -> None:
        with self.client.create_session(ENV, REFERENCE_TASK, 1) as session:
            with self.assertRaises(ValidationError) as caught:
                session.step({"type": "message", "content": "x" * 3_000_000})
            self.assertEqual(caught.exception.code, "payload_too_large")
            self.assertEqual(caught.exception.status, 413)
            self.assertIsInstance(caught.exception.details.get("limit_bytes"), int)
            # The session did not see the refused request and goes on.
            self.assertFalse(session.step({"type": "tool_call", "tool": "get_agent_profile", "args": {}}).done)

    def test_altered_snapshot_is_refused(self) -> None:
        with self.client.create_session(ENV, REFERENCE_TASK, 4) as session:
            snap = session.snapshot()
            self.assertTrue(str(snap.get("signature", "")).startswith("hmac-sha256:"))
            for edit in ({"step": snap["step"] + 1}, {"signature": None}, {"world": {}}):
                altered = {k: v for k, v in {**snap, **edit}.items() if v is not None}
                with self.assertRaises(ValidationError) as caught:
                    session.restore(altered)
                self.assertEqual(caught.exception.code, "invalid_snapshot")
                with self.assertRaises(ValidationError):
                    self.client.fork(altered)
            session.restore(snap)

    def test_unknown_session(self) -> None:
        session = self.client.create_session(ENV, REFERENCE_TASK, 2)
        session.close()
        with self.assertRaises(NotFoundError) as caught:
            session.step({"type": "message", "content": "hello?"})
        self.assertEqual(caught.exception.code, "unknown_session")
        with self.assertRaises(NotFoundError) as caught:
            self.client.session_info("ses_does_not_exist")
        self.assertEqual(caught.exception.code, "unknown_session")

    def test_unknown_episode(self) -> None:
        with self.assertRaises(NotFoundError) as caught:
            self.client.episode("run-x/no/such/episode")
        self.assertEqual(caught.exception.code, "unknown_episode")

    def test_connection_failed(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        with self.assertRaises(ConnectionFailedError) as caught:
            Client(f"http://127.0.0.1:{port}", timeout=5).health()
        self.assertEqual(caught.exception.code, "connection_failed")
        self.assertIsInstance(caught.exception, LlmixError)

    # -- sessions --

    def test_context_manager_closes_and_tolerates_a_gone_session(self) -> None:
        with self.client.create_session(ENV, REFERENCE_TASK, 3) as session:
            self.assertEqual(self.client.session_info(session.session_id)["session_id"], session.session_id)
        self.assertTrue(session.closed)
        self.assertIn("outcome", session.episode or {})
        with self.assertRaises(NotFoundError):
            self.client.session_info(session.session_id)
        # Closed behind its back (another client): leaving the block swallows unknown_session.
        with self.client.create_session(ENV, REFERENCE_TASK, 3) as other:
            Client(self.server.url).request("DELETE", f"/v1/sessions/{other.session_id}")
        self.assertTrue(other.closed)

    def test_snapshot_restore_fork(self) -> None:
        actions = self.ref["actions"]
        with self.client.create_session(ENV, self.ref["task_id"], self.ref["seed"]) as session:
            for action in actions[:3]:
                session.step(action)
            snap = session.snapshot()
            self.assertEqual(snap["env"], ENV)
            first = session.step(actions[3])
            session.restore(snap)
            self.assertFalse(session.done)
            again = session.step(actions[3])
            self.assertEqual(again.observation, first.observation)
            self.assertEqual(again.reward_components, first.reward_components)
            with session.fork() as forked:
                self.assertNotEqual(forked.session_id, session.session_id)
                self.assertEqual(forked.task_id, session.task_id)
                self.assertEqual(forked.step(actions[3]).observation, first.observation)
            with self.client.fork(snap) as forked2:
                self.assertEqual(forked2.step(actions[3]).observation, first.observation)

    def test_reset_is_a_new_session(self) -> None:
        session = self.client.create_session(ENV, self.ref["task_id"], self.ref["seed"])
        old_id, first = session.session_id, session.text
        session.step(self.ref["actions"][0])
        observation = session.reset()
        self.assertNotEqual(session.session_id, old_id)
        self.assertEqual(observation["rendered"], first)
        self.assertFalse(session.done)
        with self.assertRaises(NotFoundError):
            self.client.session_info(old_id)
        other = session.reset(task_id=REFERENCE_TASK, seed=9)
        self.assertEqual(session.seed, 9)
        self.assertTrue(other["rendered"])
        session.close()


class LimitsTest(unittest.TestCase):
    """A real server with ``--auth`` (bearer tokens with scopes) and ``--capacity 1``."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.auth_dir = tempfile.mkdtemp(prefix="llmix-py-auth-")
        auth = os.path.join(cls.auth_dir, "tokens.json")
        with open(auth, "w") as f:
            json.dump({"tokens": [{"token": "runner-token", "scopes": ["env:run"], "name": "runner"},
                                  {"token": "admin-token", "scopes": ["env:run", "trajectories:read", "admin"], "name": "admin"}]}, f)
        cls.server = Server(extra_args=["--auth", auth, "--capacity", "1"])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()
        shutil.rmtree(cls.auth_dir, ignore_errors=True)

    def test_auth(self) -> None:
        for token in (None, "wrong-token"):
            with self.assertRaises(AuthError) as caught:
                Client(self.server.url, token=token).envs()
            self.assertEqual(caught.exception.code, "unauthorized")
            self.assertEqual(caught.exception.status, 401)
        self.assertIn(ENV, [e["id"] for e in Client(self.server.url, token="runner-token").envs()])
        with self.assertRaises(AuthError) as caught:
            Client(self.server.url, token="runner-token").episode("any/episode")  # needs trajectories:read
        self.assertEqual(caught.exception.code, "forbidden")
        self.assertEqual(caught.exception.status, 403)
        with self.assertRaises(NotFoundError):
            Client(self.server.url, token="admin-token").episode("any/episode")

    def test_capacity(self) -> None:
        client = Client(self.server.url, token="runner-token")
        with client.create_session(ENV, REFERENCE_TASK, 1):
            with self.assertRaises(CapacityError) as caught:
                client.create_session(ENV, REFERENCE_TASK, 2)
            self.assertEqual(caught.exception.code, "capacity_reached")
            self.assertEqual(caught.exception.status, 503)
            self.assertIsNotNone(caught.exception.retry_after)
        # The slot is free again once the first session closed.
        client.create_session(ENV, REFERENCE_TASK, 2).close()


class _Stub(http.server.BaseHTTPRequestHandler):
    """A scripted HTTP server: each request pops the next (status, headers, body) and logs itself."""

    protocol_version = "HTTP/1.1"
    script: List[Any] = []
    seen: List[Dict[str, Any]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        type(self).seen.append({"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        entry = type(self).script.pop(0)
        if entry == "DROP":  # close the connection without an answer, like a keep-alive timeout
            self.close_connection = True
            return
        status, headers, payload = entry
        data = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


class TransportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.httpd.server_address[1]}"

    @classmethod
    def tearDownClass(cls) -> None:
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def setUp(self) -> None:
        _Stub.script = []
        _Stub.seen = []

    def test_bearer_token_and_keep_alive(self) -> None:
        _Stub.script = [(200, {}, {"status": "ok", "sessions": 0})] * 3
        client = Client(self.url, token="T0K")
        for _ in range(3):
            self.assertEqual(client.health()["status"], "ok")
        self.assertEqual([s["auth"] for s in _Stub.seen], ["Bearer T0K"] * 3)
        self.assertEqual(len(client._connections), 1)  # one persistent connection for the thread
        client.close()

    def test_stale_keep_alive_connection_is_retried_once(self) -> None:
        ok = (200, {}, {"status": "ok", "sessions": 0})
        client = Client(self.url)
        _Stub.script = [ok, "DROP", ok]
        self.assertEqual(client.health()["status"], "ok")
        self.assertEqual(client.health()["status"], "ok")  # dropped on the reused connection, sent again
        self.assertEqual(len(_Stub.seen), 3)
        _Stub.script = ["DROP"]
        with self.assertRaises(ConnectionFailedError):
            Client(self.url).health()  # a fresh connection dropped: not retried
        client.close()

    def test_auth_errors(self) -> None:
        _Stub.script = [(401, {}, {"error": {"code": "unauthorized", "message": "no token", "details": {}}}),
                        (403, {}, {"error": {"code": "forbidden", "message": "needs admin", "details": {"scope": "admin"}}})]
        client = Client(self.url)
        for code in ("unauthorized", "forbidden"):
            with self.assertRaises(AuthError) as caught:
                client.envs()
            self.assertEqual(caught.exception.code, code)
        self.assertEqual(caught.exception.details, {"scope": "admin"})

    def test_capacity_error_and_retry(self) -> None:
        busy = (503, {"Retry-After": "0"}, {"error": {"code": "capacity_reached", "message": "full", "details": {"capacity": 1}}})
        created = (201, {}, {"session_id": "ses_1", "env": ENV, "env_version": "1.0.0", "task_id": "t", "seed": 1,
                             "observation": {"rendered": "hi", "tokens": 1}, "tools": []})
        _Stub.script = [busy]
        with self.assertRaises(CapacityError) as caught:
            Client(self.url).create_session(ENV, "t", 1)  # retries are off by default
        self.assertEqual(caught.exception.code, "capacity_reached")
        self.assertEqual(caught.exception.retry_after, 0.0)
        self.assertEqual(caught.exception.status, 503)
        _Stub.script = [busy, busy, created]
        session = Client(self.url, capacity_retries=2).create_session(ENV, "t", 1, record=True, policy_checkpoint="step_1")
        self.assertEqual(session.session_id, "ses_1")
        self.assertEqual(session.text, "hi")
        sent = json.loads(_Stub.seen[-1]["body"])
        self.assertEqual(sent, {"env": ENV, "task_id": "t", "seed": 1, "record": True, "policy_checkpoint": "step_1"})

    def test_step_retries_name_the_expected_step_so_a_retry_never_acts_twice(self) -> None:
        created = (201, {}, {"session_id": "ses_1", "env": ENV, "env_version": "1.0.0", "task_id": "t", "seed": 1,
                             "observation": {"rendered": "hi", "tokens": 1}, "tools": []})
        answer = (200, {}, {"observation": {"rendered": "ok", "tokens": 1}, "reward": 0.5, "reward_components": {"task": 0.5},
                            "terminated": False, "truncated": False, "tool_result": None, "info": {}})
        busy = (409, {}, {"error": {"code": "session_busy", "message": "busy", "details": {}}})
        down = (503, {"Retry-After": "1"}, {"error": {"code": "fleet_unavailable", "message": "redis", "details": {}}})
        # A replica dies under the first step (the connection drops twice), another holds its lock, Redis blinks.
        _Stub.script = [created, "DROP", "DROP", busy, down, answer, answer]
        session = Client(self.url, step_retries=5).create_session(ENV, "t", 1)
        self.assertEqual(session.steps, 0)
        self.assertEqual(session.tool_call("lookup").reward, 0.5)
        self.assertEqual(session.steps, 1)
        session.tool_call("lookup")
        sent = [json.loads(s["body"]).get("expect_steps") for s in _Stub.seen[1:]]
        self.assertEqual(sent, [0, 0, 0, 0, 0, 1])
        # Without retries, the failure is raised as it came.
        _Stub.script = [created, down]
        session = Client(self.url).create_session(ENV, "t", 1)
        with self.assertRaises(FleetUnavailableError) as caught:
            session.tool_call("lookup")
        self.assertIsInstance(caught.exception, CapacityError)
        self.assertEqual(session.steps, 0)
        conflict = (409, {}, {"error": {"code": "step_conflict", "message": "m", "details": {"steps": 3, "expect_steps": 0}}})
        _Stub.script = [conflict]
        with self.assertRaises(StepConflictError) as caught_conflict:
            session.tool_call("lookup")
        self.assertEqual(caught_conflict.exception.details["steps"], 3)

    def test_error_mapping(self) -> None:
        def err(status: int, code: str, headers: Any = None) -> LlmixError:
            body = json.dumps({"error": {"code": code, "message": "m", "details": {"retry_after_s": 2}}}).encode()
            return error_from_response(status, body, headers)

        self.assertIsInstance(err(404, "unknown_env"), NotFoundError)
        self.assertIsInstance(err(404, "unknown_route"), NotFoundError)
        self.assertIsInstance(err(400, "invalid_json"), ValidationError)
        self.assertIsInstance(err(400, "invalid_argument"), ValidationError)
        self.assertIsInstance(err(413, "payload_too_large"), ValidationError)
        self.assertIsInstance(err(409, "session_busy"), SessionBusyError)
        self.assertIsInstance(err(504, "step_timeout"), StepTimeoutError)
        self.assertIsInstance(err(500, "internal"), ServerError)
        capacity = err(503, "capacity_reached")
        self.assertIsInstance(capacity, CapacityError)
        self.assertEqual(capacity.retry_after, 2.0)  # from details when there is no Retry-After header
        self.assertEqual(err(503, "capacity_reached", {"retry-after": "5"}).retry_after, 5.0)
        raw = error_from_response(502, b"<html>bad gateway</html>")
        self.assertIsInstance(raw, ServerError)
        self.assertEqual(raw.code, "http_502")
        self.assertIn("[unknown_env] m (HTTP 404)", str(err(404, "unknown_env")))


if __name__ == "__main__":
    unittest.main()
