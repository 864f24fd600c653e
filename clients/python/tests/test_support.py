"""Shared fixtures of the client's tests (no tests of its own): a real ``llmix serve`` process and the
reference (oracle) actions of a billing-dispute episode.

The server is the built CLI, ``node dist/cli/bin.js serve --port 0 --store <tmp>/db``, started from the
repository root (``npm test`` builds dist first). Its API URL is read from the first
``http://127.0.0.1:<port>`` it prints. ``LLMIX_TEST_SERVER`` may name another command prefix to run in
place of ``node dist/cli/bin.js serve`` (the arguments ``--port 0 --store PATH`` are appended).

The reference actions come from the CLI as well: ``llmix rollout --policy oracle --task T -n 1`` stores
an oracle episode in the same store, and ``llmix show --json`` prints its steps. The episode is
deterministic for its task id and seed, so the Python client replaying those actions must reach the
same outcome (1.0).
"""
from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from llmix_client import Client

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # clients/python
REPO_ROOT = PACKAGE_ROOT.parent.parent
BIN = REPO_ROOT / "dist" / "cli" / "bin.js"

if str(PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_ROOT))

#: A billing-dispute task whose oracle episode verifies identity, looks up charges and refunds, issues a
#: refund and notes it: most of the tool surface in 8 steps.
REFERENCE_TASK = "billing-dispute/medium/seed-1212698690"
ENV = "billing-dispute"
URL_RE = re.compile(r"http://127\.0\.0\.1:\d+")


def node() -> str:
    return shutil.which("node") or "node"


def llmix_cli(*args: str, timeout: float = 60) -> str:
    """Run the built CLI from the repository root; its stdout (raises on a non-zero exit)."""
    if not BIN.exists():
        raise RuntimeError(f"{BIN} is missing: run `npm run build` first (npm test does)")
    run = subprocess.run([node(), str(BIN), *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        raise RuntimeError(f"llmix {' '.join(args)} exited {run.returncode}: {run.stderr.strip()}")
    return run.stdout


def reference_episode(store: str, task_id: str = REFERENCE_TASK) -> Dict[str, Any]:
    """Store one oracle episode of ``task_id`` in ``store``; its id, task, seed, actions and outcome."""
    result = json.loads(llmix_cli("rollout", "--env", ENV, "--policy", "oracle", "--task", task_id, "-n", "1",
                                  "--store", store, "--json"))
    episode_id = result["groups"][0]["episodes"][0]["episode_id"]
    shown = json.loads(llmix_cli("show", "--episode", episode_id, "--store", store, "--json"))
    return {
        "episode_id": episode_id,
        "task_id": shown["episode"]["task_id"],
        "seed": shown["episode"]["seed"],
        "outcome": shown["episode"]["outcome"],
        "actions": [step["action"] for step in shown["steps"]],
        "observations": [step["observation"]["rendered"] for step in shown["steps"]],
    }


_LIVE: "set[Server]" = set()


def _stop_all_and_exit(signum: int, _frame: Any) -> None:
    """SIGTERM to the test run (e.g. a CI timeout): stop the servers it started, then exit."""
    for server in list(_LIVE):
        server.stop()
    os._exit(128 + signum)


if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _stop_all_and_exit)


class Server:
    """One ``llmix serve`` process on a free port with its own store, in a temporary directory
    (``self.dir``, removed by ``stop``); ``extra_args`` are appended to the command line."""

    def __init__(self, with_reference: bool = False, extra_args: Sequence[str] = ()):
        self.dir = tempfile.mkdtemp(prefix="llmix-py-")
        self.store = os.path.join(self.dir, "db")
        self.reference: Optional[Dict[str, Any]] = reference_episode(self.store) if with_reference else None
        override = os.environ.get("LLMIX_TEST_SERVER")
        prefix = shlex.split(override) if override else [node(), str(BIN), "serve"]
        if not override and not BIN.exists():
            raise RuntimeError(f"{BIN} is missing: run `npm run build` first (npm test does)")
        self._stderr = open(os.path.join(self.dir, "stderr.log"), "w+")
        # Its own process group: stop() signals the group, so a wrapper command (npx, tsx) cannot leave
        # the server behind.
        self.proc = subprocess.Popen([*prefix, "--port", "0", "--store", self.store, *extra_args], cwd=REPO_ROOT,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     start_new_session=hasattr(os, "killpg"))
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self.output: List[str] = []
        _LIVE.add(self)
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = self._wait_for_url(timeout=30)

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.output.append(line)
            match = URL_RE.search(line)
            if match:
                return match.group(0)
        self._stderr.flush()
        self._stderr.seek(0)
        stderr = self._stderr.read()
        self.stop()
        raise RuntimeError("llmix serve printed no http://127.0.0.1:PORT URL\nstdout:\n" + "".join(self.output) + "\nstderr:\n" + stderr)

    def _signal(self, sig: int) -> None:
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.proc.pid, sig)  # the group holds the server and any wrapper around it
            else:
                self.proc.send_signal(sig)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """SIGTERM, then wait (the server finishes in-flight steps and flushes its store); kill if stuck."""
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
                self.proc.wait(timeout=5)
        _LIVE.discard(self)
        if not self._stderr.closed:
            self._stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class ServerTestCase(unittest.TestCase):
    """A test class with a real server holding a stored reference episode, and a client of it."""

    server: Server
    client: Client
    ref: Dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(with_reference=True)
        cls.client = Client(cls.server.url, timeout=30)
        assert cls.server.reference is not None
        cls.ref = cls.server.reference

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.server.stop()
