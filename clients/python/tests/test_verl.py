"""The verl adapter (``llmix_client.verl``) against a real ``llmix serve``.

verl is not installable here, so this file installs a stand-in of the verl modules the adapter touches
into ``sys.modules`` (``VerlStandIn``): each class and function mirrors its upstream namesake at verl
0.8.0.dev, commit b178a3cd56f58b2d502255daba591e92833930a7 (named in its docstring), keeping the behaviour
the adapter depends on (call sequences, argument names, validation, registries) and leaving out what it
does not (tokens, Ray, tracing). ``ToolAgentLoop`` is the upstream state machine without tokenization:
its "model" is a script of actions (the reference episode's oracle actions from ``test_support``).
"""
from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from enum import Enum
from types import SimpleNamespace
from typing import Any, Dict, List, Optional
from uuid import uuid4

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_support, however the tests are run
from test_support import ENV, PACKAGE_ROOT, REFERENCE_TASK, Server, llmix_cli

from llmix_client import Client, NotFoundError
from llmix_client import verl as llmix_verl
from llmix_client.verl import (
    TRAJECTORIES,
    LlmixInteractionCore,
    LlmixToolCore,
    Task,
    assistant_text,
    compute_score,
    find_record,
    parse_task,
    settings_from_config,
    sft_messages,
    sft_tools,
    task_of_row,
)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ===== the verl stand-in ================================================================================


def _load_config(path: str) -> Any:
    """Stands in for ``OmegaConf.load`` + ``OmegaConf.to_container(resolve=True)`` on the files the tests
    use: JSON after ``#`` comment lines (the form of ``llmix export --format verl-tools``)."""
    with open(path, encoding="utf-8") as f:
        return json.loads("".join(line for line in f if not line.lstrip().startswith("#")))


class _Invalid(ValueError):
    """Stands in for ``pydantic.ValidationError``."""


class _Model:
    """A minimal pydantic v2 ``BaseModel``: typed fields (no coercion of int to str, as pydantic v2 in lax
    mode), unknown keys ignored (``extra="ignore"``), ``model_dump(exclude_unset, exclude_none)``."""

    _fields: Dict[str, Any] = {}  # name -> (checker, required, default factory)

    def __init__(self, **data: Any):
        self._set = set()
        for name, (check, required, default) in self._fields.items():
            if name in data:
                setattr(self, name, check(data[name], f"{type(self).__name__}.{name}"))
                self._set.add(name)
            elif required:
                raise _Invalid(f"{type(self).__name__}.{name}: field required")
            else:
                setattr(self, name, default())

    @classmethod
    def model_validate(cls, data: Any) -> "_Model":
        if not isinstance(data, dict):
            raise _Invalid(f"{cls.__name__}: input should be a dict")
        return cls(**data)

    def model_dump(self, exclude_unset: bool = False, exclude_none: bool = False) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name in self._fields:
            if exclude_unset and name not in self._set:
                continue
            value = _dump(getattr(self, name), exclude_unset, exclude_none)
            if exclude_none and value is None:
                continue
            out[name] = value
        return out


def _dump(value: Any, exclude_unset: bool, exclude_none: bool) -> Any:
    if isinstance(value, _Model):
        return value.model_dump(exclude_unset=exclude_unset, exclude_none=exclude_none)
    if isinstance(value, dict):
        return {k: _dump(v, exclude_unset, exclude_none) for k, v in value.items()}
    if isinstance(value, list):
        return [_dump(v, exclude_unset, exclude_none) for v in value]
    return value


def _str(optional: bool = False) -> Any:
    def check(value: Any, where: str) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise _Invalid(f"{where}: input should be a valid string, got {value!r}")
        return value
    return check


def _str_list(optional: bool = False) -> Any:
    def check(value: Any, where: str) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _Invalid(f"{where}: input should be a list of strings, got {value!r}")
        return value
    return check


def _model(cls: Any) -> Any:
    def check(value: Any, where: str) -> Any:
        return cls.model_validate(value)
    return check


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _Invalid(f"{where}: input should be a valid boolean")
    return value


class OpenAIFunctionPropertySchema(_Model):
    """verl/tools/schemas.py ``OpenAIFunctionPropertySchema``: type: str; description: str | None; enum: list[str] | None."""
    _fields = {"type": (_str(), True, None), "description": (_str(True), False, lambda: None), "enum": (_str_list(True), False, lambda: None)}


def _properties(value: Any, where: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"{where}: input should be a dict")
    return {k: OpenAIFunctionPropertySchema.model_validate(v) for k, v in value.items()}


class OpenAIFunctionParametersSchema(_Model):
    """verl/tools/schemas.py ``OpenAIFunctionParametersSchema``: type: str; properties: dict[str, Property]; required: list[str]."""
    _fields = {"type": (_str(), True, None), "properties": (_properties, True, None), "required": (_str_list(), True, None)}


class OpenAIFunctionSchema(_Model):
    """verl/tools/schemas.py ``OpenAIFunctionSchema``: name, description, parameters (default: no properties), strict=False."""
    _fields = {
        "name": (_str(), True, None),
        "description": (_str(), True, None),
        "parameters": (_model(OpenAIFunctionParametersSchema), False,
                       lambda: OpenAIFunctionParametersSchema(type="object", properties={}, required=[])),
        "strict": (_bool, False, lambda: False),
    }


class OpenAIFunctionToolSchema(_Model):
    """verl/tools/schemas.py ``OpenAIFunctionToolSchema``: type: str; function: OpenAIFunctionSchema."""
    _fields = {"type": (_str(), True, None), "function": (_model(OpenAIFunctionSchema), True, None)}


class ToolResponse:
    """verl/tools/schemas.py ``ToolResponse``: text / image / video (image and video must be lists)."""

    def __init__(self, text: Optional[str] = None, image: Optional[list] = None, video: Optional[list] = None):
        if image is not None and not isinstance(image, list):
            raise ValueError("Image must be a list")
        if video is not None and not isinstance(video, list):
            raise ValueError("Video must be a list")
        self.text, self.image, self.video = text, image, video


class BaseTool:
    """verl/tools/base_tool.py ``BaseTool`` (upstream code, minus the schema print and ``rollout_trace_op``)."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        self.config = config
        self.tool_schema = tool_schema or self.get_openai_tool_schema()
        assert self.tool_schema is not None, "Tool schema is not set!"
        self.name = self.tool_schema.function.name

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        return self.tool_schema

    async def create(self, instance_id: Optional[str] = None, **kwargs: Any):
        if instance_id is None:
            return str(uuid4()), ToolResponse()
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: Dict[str, Any], **kwargs: Any):
        return ToolResponse(text="Updated the tool state."), 0.0, {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        pass


def get_tool_class(cls_name: str) -> Any:
    """verl/tools/utils/tool_registry.py ``get_tool_class`` (upstream code)."""
    module_name, class_name = cls_name.rsplit(".", 1)
    if module_name not in sys.modules:
        spec = importlib.util.find_spec(module_name)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    else:
        module = sys.modules[module_name]
    return getattr(module, class_name)


def initialize_tools_from_config(tools_config_file: str) -> List[Any]:
    """verl/tools/utils/tool_registry.py ``initialize_tools_from_config``, NATIVE tools only."""
    tool_list = []
    for tool_config in _load_config(tools_config_file)["tools"]:
        if tool_config["config"]["type"] != "native":
            raise NotImplementedError
        tool_cls = get_tool_class(tool_config["class_name"])
        schema = tool_config.get("tool_schema")
        tool_schema = None if schema is None else OpenAIFunctionToolSchema.model_validate(schema)
        tool_list.append(tool_cls(config=tool_config["config"], tool_schema=tool_schema))
    return tool_list


class BaseInteraction:
    """verl/interactions/base.py ``BaseInteraction`` (upstream code)."""

    def __init__(self, config: Dict[str, Any]):
        self.config = config
        self.name: str = config.get("name", "interaction_agent")

    async def start_interaction(self, instance_id: Optional[str] = None, **kwargs: Any) -> str:
        return str(uuid4()) if instance_id is None else instance_id

    async def generate_response(self, instance_id: str, messages: List[Dict[str, Any]], **kwargs: Any):
        return False, "Your current result seems acceptable.", 0.8, {}

    async def calculate_score(self) -> float:
        return 0.0

    async def finalize_interaction(self) -> None:
        pass


def initialize_interactions_from_config(interaction_config_file: str) -> Dict[str, Any]:
    """verl/interactions/utils/interaction_registry.py ``initialize_interactions_from_config`` (upstream
    logic: class by name, ``name`` from the item or the class name, injected into the config)."""
    interaction_map: Dict[str, Any] = {}
    for item in _load_config(interaction_config_file)["interaction"]:
        cls_name = item["class_name"]
        interaction_cls = get_tool_class(cls_name)  # upstream get_interaction_class: the same code
        config = dict(item.get("config") or {})
        name = item.get("name")
        if name is None:
            simple = cls_name.split(".")[-1]
            name = simple[:-11].lower() if simple.endswith("Interaction") else simple.lower()
        if name in interaction_map:
            raise ValueError(f"Duplicate interaction name '{name}' found.")
        config["name"] = name
        interaction_map[name] = interaction_cls(config=config)
    return interaction_map


_agent_loop_registry: Dict[str, Dict[str, str]] = {}


def register(agent_name: str) -> Any:
    """verl/experimental/agent_loop/agent_loop.py ``register`` (upstream code)."""
    def decorator(subclass: type) -> type:
        fqdn = f"{subclass.__module__}.{subclass.__qualname__}"
        _agent_loop_registry[agent_name] = {"_target_": fqdn}
        return subclass
    return decorator


class DictConfigWrap:
    """verl/experimental/agent_loop/agent_loop.py ``DictConfigWrap``."""

    def __init__(self, config: Any):
        self.config = config


class AgentLoopOutput:
    """verl/experimental/agent_loop/agent_loop.py ``AgentLoopOutput`` (token fields left out)."""

    def __init__(self, num_turns: int, extra_fields: Dict[str, Any], messages: List[Dict[str, Any]]):
        self.num_turns = num_turns
        self.extra_fields = extra_fields
        self.reward_score: Optional[float] = None
        self.messages = messages  # stand-in only: the conversation, in place of prompt/response ids


class AgentLoopBase:
    """verl/experimental/agent_loop/agent_loop.py ``AgentLoopBase.__init__`` (it takes extra kwargs)."""

    def __init__(self, trainer_config: DictConfigWrap, server_manager: Any, tokenizer: Any, processor: Any,
                 dataset_cls: Any = None, dataset_config: Any = None, **kwargs: Any):
        self.config = trainer_config.config
        self.server_manager = server_manager


class AgentState(Enum):
    """verl/experimental/agent_loop/tool_agent_loop.py ``AgentState``."""
    PENDING = "pending"
    GENERATING = "generating"
    PROCESSING_TOOLS = "processing_tools"
    TERMINATED = "terminated"
    INTERACTING = "interacting"


class FunctionCall:
    """verl/experimental/agent_loop/tool_parser.py ``FunctionCall``: name + arguments as a JSON string."""

    def __init__(self, name: str, arguments: str):
        self.name, self.arguments = name, arguments


class AgentData:
    """verl/experimental/agent_loop/tool_agent_loop.py ``AgentData`` (token state left out)."""

    def __init__(self, messages: List[Dict[str, Any]], request_id: str, tools_kwargs: Dict[str, Any],
                 interaction: Any = None, interaction_kwargs: Optional[Dict[str, Any]] = None):
        self.messages = messages
        self.request_id = request_id
        self.tools_kwargs = tools_kwargs
        self.interaction = interaction
        self.interaction_kwargs = interaction_kwargs or {}
        self.turn_scores: List[float] = []
        self.tool_rewards: List[float] = []
        self.user_turns = 0
        self.assistant_turns = 0
        self.tool_calls: List[FunctionCall] = []
        self.extra_fields: Dict[str, Any] = {}


class ToolAgentLoop(AgentLoopBase):
    """verl/experimental/agent_loop/tool_agent_loop.py ``ToolAgentLoop`` without tokens: the same state
    machine, tool calls (``_call_tool``: create / execute / release per call, errors as text) and
    interaction turns. ``server_manager.generate`` returns the next scripted turn ``(content, tool_calls)``."""

    def __init__(self, trainer_config: DictConfigWrap, server_manager: Any, tokenizer: Any, processor: Any, **kwargs: Any):
        super().__init__(trainer_config, server_manager, tokenizer, processor, **kwargs)
        multi_turn = trainer_config.config.actor_rollout_ref.rollout.multi_turn
        self.max_user_turns = multi_turn.max_user_turns
        self.max_assistant_turns = multi_turn.max_assistant_turns
        self.max_parallel_calls = multi_turn.max_parallel_calls
        tool_list = initialize_tools_from_config(multi_turn.tool_config_path) if multi_turn.tool_config_path else []
        self.tools = {tool.name: tool for tool in tool_list}
        self.tool_schemas = [tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for tool in tool_list]
        self.interaction_config_file = multi_turn.interaction_config_path
        if self.interaction_config_file:
            self.interaction_map = initialize_interactions_from_config(self.interaction_config_file)

    async def run(self, sampling_params: Dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        messages = list(kwargs["raw_prompt"])
        request_id = uuid4().hex
        tools_kwargs = kwargs.get("tools_kwargs", {})
        interaction = None
        interaction_kwargs: Dict[str, Any] = {}
        if self.interaction_config_file:
            interaction_kwargs = kwargs["extra_info"]["interaction_kwargs"]
            if "name" not in interaction_kwargs:
                raise ValueError("'name' key is required in interaction_kwargs")
            interaction = self.interaction_map[interaction_kwargs["name"]]
            await interaction.start_interaction(request_id, **interaction_kwargs)
        agent_data = AgentData(messages, request_id, tools_kwargs, interaction, interaction_kwargs)
        state = AgentState.PENDING
        while state != AgentState.TERMINATED:
            if state == AgentState.PENDING:
                state = await self._handle_pending_state(agent_data, sampling_params)
            elif state == AgentState.GENERATING:
                state = await self._handle_generating_state(agent_data, sampling_params)
            elif state == AgentState.PROCESSING_TOOLS:
                state = await self._handle_processing_tools_state(agent_data)
            elif state == AgentState.INTERACTING:
                state = await self._handle_interacting_state(agent_data)
            else:
                state = AgentState.TERMINATED
        output = AgentLoopOutput(agent_data.user_turns + agent_data.assistant_turns + 1, {}, agent_data.messages)
        output.extra_fields.update({"turn_scores": agent_data.turn_scores, "tool_rewards": agent_data.tool_rewards})
        return output

    async def _handle_pending_state(self, agent_data: AgentData, sampling_params: Dict[str, Any]) -> AgentState:
        # upstream: prompt_ids = apply_chat_template(messages, tools=self.tool_schemas)
        self.server_manager.shown_tools.append([s["function"]["name"] for s in self.tool_schemas])
        return AgentState.GENERATING

    async def _handle_generating_state(self, agent_data: AgentData, sampling_params: Dict[str, Any]) -> AgentState:
        content, tool_calls = await self.server_manager.generate(request_id=agent_data.request_id)
        agent_data.assistant_turns += 1
        if self.max_assistant_turns and agent_data.assistant_turns >= self.max_assistant_turns:
            return AgentState.TERMINATED
        if self.max_user_turns and agent_data.user_turns >= self.max_user_turns:
            return AgentState.TERMINATED
        agent_data.tool_calls = tool_calls
        if self.interaction_config_file:
            agent_data.messages.append({"role": "assistant", "content": content})
        if agent_data.tool_calls:
            return AgentState.PROCESSING_TOOLS
        if self.interaction_config_file:
            return AgentState.INTERACTING
        return AgentState.TERMINATED

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        tasks = [self._call_tool(call, agent_data.tools_kwargs, agent_data) for call in agent_data.tool_calls[: self.max_parallel_calls]]
        responses = await asyncio.gather(*tasks)
        for tool_response, tool_reward, _ in responses:
            agent_data.messages.append({"role": "tool", "content": tool_response.text or ""})
            if tool_reward is not None:
                agent_data.tool_rewards.append(tool_reward)
        agent_data.user_turns += 1
        return AgentState.GENERATING

    async def _handle_interacting_state(self, agent_data: AgentData) -> AgentState:
        should_terminate, response, reward, _ = await agent_data.interaction.generate_response(
            agent_data.request_id, agent_data.messages, **agent_data.interaction_kwargs)
        agent_data.user_turns += 1
        agent_data.messages.append({"role": "user", "content": response})
        if reward is not None:
            agent_data.turn_scores.append(reward)
        return AgentState.TERMINATED if should_terminate else AgentState.GENERATING

    async def _call_tool(self, tool_call: FunctionCall, tools_kwargs: Dict[str, Any], agent_data: AgentData):
        tool, instance_id = None, None
        try:
            tool_name = tool_call.name
            tool_args = json.loads(tool_call.arguments)
            tool = self.tools[tool_name]
            kwargs = tools_kwargs.get(tool_name, {})
            instance_id, _ = await tool.create(create_kwargs=kwargs.get("create_kwargs", {}))
            tool_execution_response, tool_reward, res = await tool.execute(instance_id, tool_args, agent_data=agent_data)
        except Exception as e:
            return ToolResponse(text=f"Error when executing tool: {e}"), 0.0, {}
        finally:
            if tool and instance_id:
                await tool.release(instance_id)
        return ToolResponse(text=tool_execution_response.text), tool_reward, res


def reward_loop_extra_info(row: Dict[str, Any], output: AgentLoopOutput) -> Dict[str, Any]:
    """verl/experimental/reward_loop/reward_manager/naive.py ``NaiveRewardManager.run_single``: the
    row's ``extra_info`` updated with the agent loop's extra fields (``tool_extra_fields``)."""
    extra_info = dict(row.get("extra_info", {}))
    extra_info.update(output.extra_fields.items())
    extra_info["num_turns"] = output.num_turns
    extra_info["rollout_reward_scores"] = {}  # non_tensor_batch has no "reward_scores" there
    return extra_info


def trainer_extra_info(row: Dict[str, Any], output: AgentLoopOutput) -> Dict[str, Any]:
    """verl/workers/reward_manager/naive.py ``NaiveRewardManager.__call__``: ``extra_info`` plus the
    batch's ``reward_scores`` column (the agent loop's extra field) as ``rollout_reward_scores``."""
    extra_info = dict(row.get("extra_info", {}))
    extra_info["num_turns"] = output.num_turns
    extra_info["rollout_reward_scores"] = output.extra_fields.get("reward_scores", {})
    return extra_info


class MultiTurnSFTDataset:
    """verl/utils/dataset/multiturn_sft_dataset.py ``MultiTurnSFTDataset``: reads rows (here given as the
    dicts ``pd.read_parquet`` yields, lists as list-like arrays), ``self.messages`` / ``self.tools`` per row,
    ``_build_messages(row)`` then the chat template per message with the tools given with the first."""

    def __init__(self, rows: List[Dict[str, Any]], config: Optional[Dict[str, Any]] = None):
        config = config or {}
        self.messages_key = config.get("messages_key", "messages")
        self.tools_key = config.get("tools_key", "tools")
        self.rows = rows
        self._read_files_and_process()

    def _read_files_and_process(self) -> None:
        self.messages = [row[self.messages_key] for row in self.rows]
        self.tools = [row[self.tools_key] for row in self.rows] if all(self.tools_key in r for r in self.rows) else None

    def _build_messages(self, example: Dict[str, Any]) -> Any:
        return example[self.messages_key]

    def __getitem__(self, item: int) -> Dict[str, Any]:
        messages = self._build_messages(dict(self.rows[item]))
        tools = self.tools[item] if self.tools is not None else None
        # upstream: processor.apply_chat_template([message], tools=tools if i == 0 else None, ...)
        return {"rendered": [(message, tools if i == 0 else None) for i, message in enumerate(messages)]}


class FakeArray(list):
    """What pandas gives for a Parquet list: an array with ``tolist()`` (numpy is not a dependency here)."""

    def tolist(self) -> list:
        return list(self)


class VerlStandIn:
    """Installs the stand-in as the ``verl`` package in ``sys.modules`` (and removes it)."""

    MODULES: Dict[str, Dict[str, Any]] = {
        "verl": {},
        "verl.tools": {},
        "verl.tools.schemas": {"OpenAIFunctionToolSchema": OpenAIFunctionToolSchema, "ToolResponse": ToolResponse},
        "verl.tools.base_tool": {"BaseTool": BaseTool},
        "verl.tools.utils": {},
        "verl.tools.utils.tool_registry": {"get_tool_class": get_tool_class, "initialize_tools_from_config": initialize_tools_from_config},
        "verl.interactions": {},
        "verl.interactions.base": {"BaseInteraction": BaseInteraction},
        "verl.experimental": {},
        "verl.experimental.agent_loop": {},
        "verl.experimental.agent_loop.agent_loop": {"register": register, "_agent_loop_registry": _agent_loop_registry,
                                                    "AgentLoopBase": AgentLoopBase, "AgentLoopOutput": AgentLoopOutput},
        "verl.experimental.agent_loop.tool_agent_loop": {"ToolAgentLoop": ToolAgentLoop, "AgentState": AgentState, "AgentData": AgentData},
        "verl.utils": {},
        "verl.utils.dataset": {},
        "verl.utils.dataset.multiturn_sft_dataset": {"MultiTurnSFTDataset": MultiTurnSFTDataset},
    }

    @classmethod
    def install(cls) -> None:
        for name, attributes in cls.MODULES.items():
            module = types.ModuleType(name)
            module.__dict__.update(attributes)
            if "." not in name or not attributes:
                module.__path__ = []  # a package
            sys.modules[name] = module

    @classmethod
    def remove(cls) -> None:
        for name in cls.MODULES:
            sys.modules.pop(name, None)


def setUpModule() -> None:
    VerlStandIn.install()


def tearDownModule() -> None:
    global _FIXTURE
    try:
        if _FIXTURE is not None:
            _FIXTURE.stop()
            _FIXTURE = None
    finally:
        VerlStandIn.remove()


def hydra_instantiate(config: Dict[str, Any], **kwargs: Any) -> Any:
    """What ``hydra.utils.instantiate`` does with an ``agent_loop_config_path`` entry: locate ``_target_``
    (import the module, getattr the class) and call it with the other keys and ``kwargs``."""
    module_name, class_name = config["_target_"].rsplit(".", 1)
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(**{k: v for k, v in config.items() if k != "_target_"}, **kwargs)


class ScriptedModel:
    """The rollout server: each ``generate`` returns the next scripted turn. A turn is an LLMix action
    (a message becomes text, a tool call a parsed ``FunctionCall``) or a list of tool-call actions (one
    turn with parallel calls)."""

    def __init__(self, turns: List[Any]):
        self.turns = list(turns)
        self.shown_tools: List[List[str]] = []

    async def generate(self, request_id: str) -> Any:
        turn = self.turns.pop(0) if self.turns else {"type": "message", "content": "(no more scripted turns)"}
        calls = turn if isinstance(turn, list) else [turn] if turn["type"] == "tool_call" else []
        if calls:
            return "", [FunctionCall(c["tool"], c["args"] if isinstance(c["args"], str) else json.dumps(c["args"])) for c in calls]
        return turn["content"], []


# ===== the tests ========================================================================================


class _Fixture:
    """What every test class shares (built once per module: a server takes seconds to start): a server
    with the reference episode, the ``verl-tools`` config of its environment exported by the CLI, a config
    holding it and a second environment's (to show the per-environment tool lists), and an interaction
    config."""

    def __init__(self) -> None:
        self.server = Server(with_reference=True)
        try:
            self.client = Client(self.server.url, timeout=30)
            assert self.server.reference is not None
            self.ref = self.server.reference
            self.dir = tempfile.mkdtemp(prefix="llmix-verl-")
            self.store = os.path.join(self.dir, "db")
            configs: List[Dict[str, Any]] = []
            for env, task in ((ENV, REFERENCE_TASK), ("incident-response", "incident-response/easy/seed-1")):
                llmix_cli("rollout", "--env", env, "--policy", "oracle", "--task", task, "-n", "1", "--run-id", f"run-{env}",
                          "--store", self.store, "--json")
                out = os.path.join(self.dir, f"{env}.tools.yaml")
                result = json.loads(llmix_cli("export", "--run", f"run-{env}", "--format", "verl-tools", "--out", out,
                                              "--store", self.store, "--json"))
                assert result["format"] == "verl-tools" and result["path"] == out, result
                configs.append(_load_config(out))
            merged = {"tools": [entry for config in configs for entry in config["tools"]]}
            for entry in merged["tools"]:
                entry["config"]["url"] = self.server.url
            self.single_tool_config = os.path.join(self.dir, f"{ENV}.tools.yaml")
            self.tool_config = os.path.join(self.dir, "tools.yaml")
            with open(self.tool_config, "w", encoding="utf-8") as f:
                f.write("# both environments, the service URL added\n" + json.dumps(merged, indent=2))
            self.interaction_config = os.path.join(self.dir, "interaction.yaml")
            with open(self.interaction_config, "w", encoding="utf-8") as f:
                json.dump({"interaction": [{"name": "llmix", "class_name": "llmix_client.verl.LlmixInteraction",
                                            "config": {"url": self.server.url}}]}, f)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        llmix_verl.close_all()
        if getattr(self, "client", None) is not None:
            self.client.close()
        self.server.stop()
        if getattr(self, "dir", None):
            shutil.rmtree(self.dir, ignore_errors=True)


_FIXTURE: Optional[_Fixture] = None


class VerlTestCase(unittest.TestCase):
    """A test class on the shared fixture (``_Fixture``)."""

    server: Server
    client: Client
    ref: Dict[str, Any]
    dir: str
    store: str
    single_tool_config: str
    tool_config: str
    interaction_config: str

    @classmethod
    def setUpClass(cls) -> None:
        global _FIXTURE
        if _FIXTURE is None:
            _FIXTURE = _Fixture()
        for name in ("server", "client", "ref", "dir", "store", "single_tool_config", "tool_config", "interaction_config"):
            setattr(cls, name, getattr(_FIXTURE, name))

    def row(self) -> Dict[str, Any]:
        """The reference task's row as ``RLHFDataset.__getitem__`` hands it to the agent loop (the columns
        of ``llmix export --format verl``, plus raw_prompt / tools_kwargs / interaction_kwargs)."""
        task = {"env": ENV, "task_id": self.ref["task_id"], "seed": self.ref["seed"]}
        tools_kwargs = {"llmix": {"create_kwargs": dict(task)}}
        interaction_kwargs = {"name": "llmix", **task}
        extra_info = {"index": 0, "split": "train", "env": ENV, "env_version": "x", "task_id": task["task_id"], "seed": task["seed"],
                      "difficulty": "medium", "need_tools_kwargs": True, "tools_kwargs": tools_kwargs, "interaction_kwargs": interaction_kwargs}
        return {
            "data_source": ENV,
            "agent_name": "llmix_agent",
            "raw_prompt": [{"role": "user", "content": self.ref["observations"][0]}],
            "ability": "agent",
            "reward_model": {"style": "rule", "ground_truth": json.dumps(task)},
            "extra_info": extra_info,
            "tools_kwargs": tools_kwargs,
            "interaction_kwargs": interaction_kwargs,
            "index": 0,
        }

    def agent_loop(self, model: ScriptedModel, interaction: bool = True, **multi_turn: Any) -> Any:
        """``LlmixAgentLoop`` as ``AgentLoopWorker._run_agent_loop`` builds it from an ``agent_loop_config_path`` entry."""
        settings = {"max_user_turns": None, "max_assistant_turns": None, "max_parallel_calls": 1, "tool_config_path": self.tool_config,
                    "interaction_config_path": self.interaction_config if interaction else None, **multi_turn}
        config = SimpleNamespace(actor_rollout_ref=SimpleNamespace(rollout=SimpleNamespace(multi_turn=SimpleNamespace(**settings))))
        return hydra_instantiate({"name": "llmix_agent", "_target_": "llmix_client.verl.LlmixAgentLoop"},
                                 trainer_config=DictConfigWrap(config), server_manager=model, tokenizer=None, processor=None,
                                 dataset_cls=None, dataset_config=DictConfigWrap({}))

    def assertClosed(self, session_id: Optional[str]) -> None:
        self.assertIsNotNone(session_id)
        with self.assertRaises(NotFoundError) as caught:
            self.client.session_info(session_id)
        self.assertEqual(caught.exception.code, "unknown_session")


class ClassesTest(VerlTestCase):
    def test_module_imports_without_verl_and_names_the_missing_dependency(self) -> None:
        code = ("import sys; import llmix_client.verl as v; assert 'verl' not in sys.modules\n"
                "try:\n    v.LlmixTool\nexcept ImportError as e:\n    print('ImportError', e)")
        run_ = subprocess.run([sys.executable, "-c", code], cwd=str(PACKAGE_ROOT), capture_output=True, text=True, timeout=60)
        self.assertEqual(run_.returncode, 0, run_.stderr)
        self.assertIn("ImportError llmix_client.verl needs verl (verl.tools.base_tool.BaseTool)", run_.stdout)

    def test_classes_subclass_verl_and_resolve_by_their_dotted_names(self) -> None:
        tool_cls = get_tool_class("llmix_client.verl.LlmixTool")
        self.assertTrue(issubclass(tool_cls, BaseTool))
        self.assertIs(tool_cls, llmix_verl.tool_class())  # built once per base class
        self.assertEqual((tool_cls.__module__, tool_cls.__qualname__), ("llmix_client.verl", "LlmixTool"))
        self.assertTrue(issubclass(get_tool_class("llmix_client.verl.LlmixInteraction"), BaseInteraction))
        self.assertTrue(issubclass(get_tool_class("llmix_client.verl.LlmixAgentLoop"), ToolAgentLoop))
        self.assertTrue(issubclass(get_tool_class("llmix_client.verl.LlmixMultiTurnSFTDataset"), MultiTurnSFTDataset))
        cls = llmix_verl.register_agent_loop()
        self.assertEqual(_agent_loop_registry["llmix_agent"], {"_target_": "llmix_client.verl.LlmixAgentLoop"})
        self.assertIs(hydra_target(_agent_loop_registry["llmix_agent"]), cls)

    def test_exported_tool_config_builds_one_verl_tool_per_environment_tool(self) -> None:
        tools = initialize_tools_from_config(self.single_tool_config)  # validates every schema as verl's pydantic models do
        env_tools = self.client.env(ENV)["tools"]
        self.assertEqual([t.name for t in tools], [t["name"] for t in env_tools])
        for tool, spec in zip(tools, env_tools):
            self.assertIsInstance(tool, llmix_verl.tool_class())
            self.assertEqual(tool.llmix_env, ENV)
            schema = tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)
            self.assertEqual(schema["function"]["description"], spec["description"])
            self.assertEqual(set(schema["function"]["parameters"]["properties"]), set(spec["parameters"]["properties"]))
            self.assertEqual(schema["function"]["parameters"]["required"], spec["parameters"].get("required", []))
        verify = next(t for t in tools if t.name == "verify_identity")
        card = verify.tool_schema.model_dump(exclude_unset=True, exclude_none=True)["function"]["parameters"]["properties"]["card_last4"]
        self.assertEqual(card, {"type": "string", "description": "Last 4 card digits the customer told you, or null"})
        with open(self.single_tool_config, encoding="utf-8") as f:
            self.assertTrue(f.readline().startswith("# verl tool config for LLMix environment billing-dispute"))

    def test_verl_tools_export_refuses_episode_filters(self) -> None:
        with self.assertRaises(RuntimeError) as caught:
            llmix_cli("export", "--run", f"run-{ENV}", "--format", "verl-tools", "--out", os.path.join(self.dir, "x.yaml"),
                      "--store", self.store, "--successes-only")
        self.assertIn("invalid_argument", str(caught.exception))


def hydra_target(entry: Dict[str, str]) -> Any:
    module_name, class_name = entry["_target_"].rsplit(".", 1)
    return getattr(importlib.import_module(module_name), class_name)


class ToolTest(VerlTestCase):
    def tool(self, name: str, url: Optional[str] = None) -> Any:
        schema = next(t for t in self.client.env(ENV)["tools"] if t["name"] == name)
        tool_schema = OpenAIFunctionToolSchema.model_validate({"type": "function", "function": {
            "name": name, "description": schema["description"], "parameters": {"type": "object", "properties": {}, "required": []}}})
        return llmix_verl.tool_class()({"type": "native", "env": ENV, "url": url or self.server.url}, tool_schema)

    def task(self) -> Dict[str, Any]:
        return {"env": ENV, "task_id": self.ref["task_id"], "seed": self.ref["seed"]}

    def test_tool_agent_loop_calls_share_one_session_per_request_id(self) -> None:
        lookup, notes = self.tool("lookup_customer"), self.tool("get_agent_profile")
        agent_data = AgentData([], uuid4().hex, {"llmix": {"create_kwargs": self.task()}})
        email = self.ref["actions"][1]["args"]["query"]

        async def call(tool: Any, args: Dict[str, Any]) -> Any:  # ToolAgentLoop._call_tool's sequence
            instance_id, _ = await tool.create(create_kwargs={})
            try:
                return await tool.execute(instance_id, args, agent_data=agent_data)
            finally:
                await tool.release(instance_id)

        async def scenario() -> List[Any]:
            return [await call(lookup, {"query": email}), await call(notes, {}), await call(lookup, {"query": email})]

        results = run(scenario())
        trajectory = TRAJECTORIES.get(agent_data.request_id)
        self.assertIsNotNone(trajectory)
        self.assertEqual(trajectory.steps, 3)
        info = self.client.session_info(trajectory.session_id)  # still open: per-call releases do not close it
        self.assertEqual(info["steps"], 3)
        self.assertIn("cus_", results[0][0].text)
        self.assertEqual(results[0][0].text, results[2][0].text)
        self.assertEqual(results[0][2], {"status": "ok", "done": False})
        self.assertAlmostEqual(trajectory.total_reward, sum(r[1] for r in results))  # the step rewards, as tool rewards
        record = run(TRAJECTORIES.finish(agent_data.request_id))
        self.assertClosed(trajectory.session_id)
        self.assertEqual(record["steps"], 3)
        self.assertEqual(record["session_id"], trajectory.session_id)
        self.assertFalse(record["ended"])
        self.assertEqual(record["outcome"], 0.0)
        self.assertIsNone(TRAJECTORIES.get(agent_data.request_id))

    def test_release_of_a_trajectory_instance_closes_its_session(self) -> None:
        tool = self.tool("lookup_customer")
        email = self.ref["actions"][1]["args"]["query"]

        async def scenario() -> Any:
            instance_id, response = await tool.create("traj-release", create_kwargs=self.task())
            self.assertEqual(instance_id, "traj-release")
            self.assertIsNone(response.text)
            first = await tool.execute(instance_id, {"query": email})
            second = await tool.execute(instance_id, {"query": "nobody-here@example.org"})
            session_id = TRAJECTORIES.get("traj-release").session_id
            self.assertEqual(self.client.session_info(session_id)["steps"], 2)
            self.assertEqual(await tool.calc_reward(instance_id), 0.0)
            await tool.release(instance_id)
            return first, second, session_id

        first, second, session_id = run(scenario())
        self.assertIn("cus_", first[0].text)
        self.assertNotEqual(first[0].text, second[0].text)
        self.assertClosed(session_id)
        self.assertIsNone(TRAJECTORIES.get("traj-release"))

    def test_create_kwargs_in_the_legacy_form_and_an_instance_without_trajectory(self) -> None:
        tool = self.tool("get_agent_profile")

        async def scenario() -> Any:
            # create(instance_id, **create_kwargs): the task as keyword arguments.
            a, _ = await tool.create("traj-legacy", **self.task())
            ra = await tool.execute(a, {})
            sa = TRAJECTORIES.get("traj-legacy").session_id
            await tool.release(a)
            # No instance id and no agent_data: the instance is its own trajectory, closed on release.
            b, _ = await tool.create(create_kwargs=self.task())
            rb = await tool.execute(b, {})
            sb = TRAJECTORIES.get(b).session_id
            await tool.release(b)
            return ra, rb, sa, sb

        ra, rb, sa, sb = run(scenario())
        self.assertEqual(ra[0].text, rb[0].text)  # same task, same seed: the same observation
        self.assertNotEqual(sa, sb)
        self.assertClosed(sa)
        self.assertClosed(sb)

    def test_bad_parameters_are_answered_with_a_clear_error_text(self) -> None:
        tool = self.tool("lookup_customer")

        async def scenario() -> List[Any]:
            instance_id, _ = await tool.create("traj-bad", create_kwargs=self.task())
            try:
                return [await tool.execute(instance_id, args) for args in ({"query": 5}, {}, ["a list"], "text")]
            finally:
                await tool.release(instance_id)

        wrong_type, missing, a_list, text = run(scenario())
        self.assertEqual(wrong_type[0].text, "[lookup_customer invalid] invalid arguments for lookup_customer: args.query: "
                                             "Invalid input: expected string, received number")
        self.assertEqual(wrong_type[2], {"status": "invalid", "done": False})
        self.assertLess(wrong_type[1], 0)  # the invalid_call penalty, as the step reward
        self.assertIn("args.query", missing[0].text)
        self.assertIn("missing (expected string)", missing[0].text)
        for response in (a_list, text):
            self.assertTrue(response[0].text.startswith("Invalid action: action.args: Invalid input: expected record"), response[0].text)

    def test_service_failures_and_calls_after_the_end_are_error_texts(self) -> None:
        unreachable = self.tool("lookup_customer", url="http://127.0.0.1:9")

        async def down() -> Any:
            instance_id, _ = await unreachable.create("traj-down", create_kwargs=self.task())
            first = await unreachable.execute(instance_id, {"query": "x"})
            again = await unreachable.execute(instance_id, {"query": "x"})
            record = TRAJECTORIES.get("traj-down").record()
            await unreachable.release(instance_id)
            return first, again, record

        first, again, record = run(down())
        self.assertTrue(first[0].text.startswith("Error: the LLMix service failed ([connection_failed]"), first[0].text)
        self.assertEqual(first[2], {"error": "connection_failed", "done": True})
        self.assertEqual(again[0].text, "Error: the episode has ended; no further actions are accepted.")
        self.assertEqual(record["error"], "connection_failed")

        end = self.tool("end_conversation")
        lookup = self.tool("lookup_customer")

        async def ended() -> Any:
            instance_id, _ = await end.create("traj-end", create_kwargs=self.task())
            last = await end.execute(instance_id, {})
            session_id = TRAJECTORIES.get("traj-end").session_id
            after, _ = await lookup.create("traj-end")
            later = await lookup.execute(after, {"query": "x"})
            outcome = await end.calc_reward(instance_id)
            await end.release(instance_id)
            return last, later, outcome, session_id

        last, later, outcome, session_id = run(ended())
        self.assertTrue(last[2]["done"])
        self.assertEqual(outcome, 0.0)  # ended without doing the task
        self.assertClosed(session_id)  # closed as soon as the episode ended
        self.assertEqual(later[0].text, "Error: the episode has ended; no further actions are accepted.")

    def test_create_rejects_a_malformed_task(self) -> None:
        tool = self.tool("lookup_customer")
        for bad, message in (({"env": ENV, "task_id": "t"}, "seed must be a non-negative integer"),
                             ({"env": "", "task_id": "t", "seed": 1}, "env must be a non-empty string"),
                             ({"env": ENV, "task_id": 7, "seed": 1}, "task_id must be a non-empty string"),
                             ({"env": ENV, "task_id": "t", "seed": True}, "seed must be a non-negative integer")):
            with self.assertRaises(ValueError) as caught:
                run(tool.create(create_kwargs=bad))
            self.assertIn(message, str(caught.exception))


class AgentLoopTest(VerlTestCase):
    def test_reference_episode_runs_in_one_session_and_scores_one(self) -> None:
        model = ScriptedModel(self.ref["actions"])
        loop = self.agent_loop(model)
        row = self.row()
        output = run(loop.run({"temperature": 1.0}, **row))
        record = output.extra_fields["reward_scores"]["llmix"]
        self.assertEqual(record["outcome"], 1.0)
        self.assertEqual(self.ref["outcome"], 1.0)
        self.assertTrue(record["ended"])
        self.assertIsNone(record["error"])
        self.assertEqual(record["steps"], len(self.ref["actions"]))
        self.assertEqual((record["env"], record["task_id"], record["seed"]), (ENV, self.ref["task_id"], self.ref["seed"]))
        self.assertClosed(record["session_id"])
        self.assertEqual(len(TRAJECTORIES), 0)
        # The model saw only this environment's tools, though the config also holds incident-response's.
        self.assertEqual(model.shown_tools, [[t["name"] for t in self.client.env(ENV)["tools"]]])
        # Every observation of the reference episode reached the model, in order, as a tool or user turn.
        turns = [m["content"] for m in output.messages if m["role"] in ("tool", "user")]
        self.assertEqual(turns[: len(self.ref["observations"])], self.ref["observations"])
        for extra_info in (reward_loop_extra_info(row, output), trainer_extra_info(row, output)):
            self.assertEqual(compute_score(row["data_source"], "whatever the model said", row["reward_model"]["ground_truth"], extra_info), 1.0)

    def test_a_failed_episode_scores_zero(self) -> None:
        # The reference episode's conversation, then ending the chat before any remedy: the task is not done.
        actions = [a for a in self.ref["actions"] if a["type"] == "message"][:1] + [{"type": "tool_call", "tool": "end_conversation", "args": {}}]
        output = run(self.agent_loop(ScriptedModel(actions)).run({}, **self.row()))
        record = output.extra_fields["reward_scores"]["llmix"]
        self.assertTrue(record["ended"])
        self.assertEqual(record["steps"], 2)  # the loop stopped as soon as the tool call ended the episode
        self.assertEqual(compute_score(ENV, "", self.row()["reward_model"]["ground_truth"], trainer_extra_info(self.row(), output)), 0.0)
        self.assertClosed(record["session_id"])

    def test_a_rollout_cut_off_by_verl_closes_its_session_and_scores_zero(self) -> None:
        output = run(self.agent_loop(ScriptedModel(self.ref["actions"]), max_assistant_turns=3).run({}, **self.row()))
        record = output.extra_fields["reward_scores"]["llmix"]
        self.assertFalse(record["ended"])
        self.assertEqual(record["outcome"], 0.0)
        self.assertEqual(record["steps"], 2)
        self.assertClosed(record["session_id"])
        self.assertEqual(len(TRAJECTORIES), 0)

    def test_parallel_tool_calls_of_one_turn_share_the_session(self) -> None:
        email = self.ref["actions"][1]["args"]["query"]
        turn = [{"type": "tool_call", "tool": "lookup_customer", "args": {"query": email}}, {"type": "tool_call", "tool": "get_agent_profile", "args": {}}]
        output = run(self.agent_loop(ScriptedModel([turn]), max_parallel_calls=2, max_assistant_turns=2).run({}, **self.row()))
        record = output.extra_fields["reward_scores"]["llmix"]
        self.assertEqual(record["steps"], 2)
        tool_turns = [m["content"] for m in output.messages if m["role"] == "tool"]
        self.assertEqual(len(tool_turns), 2)
        self.assertFalse(any(t.startswith("Error") for t in tool_turns), tool_turns)

    def test_bad_tool_arguments_reach_the_model_as_text_and_the_rollout_goes_on(self) -> None:
        script = [{"type": "tool_call", "tool": "lookup_customer", "args": {"query": 5}},
                  {"type": "tool_call", "tool": "lookup_customer", "args": "{not json"}] + self.ref["actions"]
        output = run(self.agent_loop(ScriptedModel(script)).run({}, **self.row()))
        tool_turns = [m["content"] for m in output.messages if m["role"] == "tool"]
        self.assertIn("expected string, received number", tool_turns[0])
        self.assertTrue(tool_turns[1].startswith("Error when executing tool: Expecting property name"), tool_turns[1])  # verl's own text
        record = output.extra_fields["reward_scores"]["llmix"]
        self.assertEqual(record["steps"], len(self.ref["actions"]) + 1)  # unparseable JSON never reached the environment
        self.assertTrue(record["ended"])

    def test_the_agent_loop_needs_the_interaction(self) -> None:
        with self.assertRaises(ValueError) as caught:
            self.agent_loop(ScriptedModel([]), interaction=False)
        self.assertIn("interaction_config_path", str(caught.exception))

    def test_a_row_without_a_task_is_refused(self) -> None:
        row = self.row()
        for key in ("tools_kwargs", "interaction_kwargs"):
            row.pop(key)
        row["extra_info"] = {"index": 0}
        with self.assertRaises(ValueError) as caught:
            run(self.agent_loop(ScriptedModel([])).run({}, **row))
        self.assertIn("names no LLMix task", str(caught.exception))


class InteractionTest(VerlTestCase):
    def test_messages_go_to_the_simulated_user_and_the_end_is_reported(self) -> None:
        interaction = llmix_verl.interaction_class()({"name": "llmix", "url": self.server.url})
        task = {"env": ENV, "task_id": self.ref["task_id"], "seed": self.ref["seed"]}
        greeting = self.ref["actions"][0]["content"]

        async def scenario() -> Any:
            key = await interaction.start_interaction("traj-chat", name="llmix", **task)
            messages = [{"role": "user", "content": self.ref["observations"][0]},
                        {"role": "assistant", "content": f"<think>be polite</think>\n{greeting}\n"}]
            reply = await interaction.generate_response(key, messages, name="llmix", **task)
            bye = await interaction.generate_response(key, messages + [{"role": "user", "content": reply[1]},
                                                                        {"role": "assistant", "content": "Goodbye."}], name="llmix", **task)
            score = await interaction.calculate_score(key)
            session_id = TRAJECTORIES.get(key).session_id
            await interaction.finalize_interaction(key)
            return reply, bye, score, session_id

        reply, bye, score, session_id = run(scenario())
        self.assertEqual(reply[:2], (False, self.ref["observations"][1]))  # the customer's answer to the reference greeting
        self.assertEqual(reply[3], {"done": False, "outcome": None})
        self.assertIsInstance(bye[1], str)
        self.assertEqual(score, 0.0)
        self.assertClosed(session_id)
        self.assertIsNone(TRAJECTORIES.get("traj-chat"))

    def test_a_second_task_for_one_trajectory_is_refused(self) -> None:
        core = LlmixInteractionCore({"url": self.server.url})
        run(core.start_interaction("traj-two", env=ENV, task_id=self.ref["task_id"], seed=1))
        with self.assertRaises(ValueError) as caught:
            run(core.start_interaction("traj-two", env=ENV, task_id=self.ref["task_id"], seed=2))
        self.assertIn("is bound to", str(caught.exception))
        run(core.finalize_interaction("traj-two"))


class PureFunctionsTest(unittest.TestCase):
    RECORD = {"env": ENV, "task_id": "billing-dispute/easy/seed-1", "seed": 3, "session_id": "s", "outcome": 1.0, "ended": True,
              "steps": 5, "total_reward": 0.9, "error": None}
    TRUTH = json.dumps({"env": ENV, "task_id": "billing-dispute/easy/seed-1", "seed": 3})

    def test_compute_score_finds_the_record_in_both_reward_paths(self) -> None:
        self.assertEqual(compute_score(ENV, "", self.TRUTH, {"reward_scores": {"llmix": self.RECORD}}), 1.0)
        self.assertEqual(compute_score(ENV, "", self.TRUTH, {"rollout_reward_scores": {"llmix": dict(self.RECORD, outcome=0.25)}}), 0.25)
        self.assertEqual(compute_score(ENV, "", "not json", {"reward_scores": {"llmix": self.RECORD}}), 1.0)
        self.assertIs(find_record({"reward_scores": {"other": 1}}), None)

    def test_compute_score_refuses_what_it_cannot_trust(self) -> None:
        cases = [
            (ENV, self.TRUTH, None, "no LLMix episode record"),
            (ENV, self.TRUTH, {"rollout_reward_scores": {}}, "no LLMix episode record"),
            ("incident-response", self.TRUTH, {"reward_scores": {"llmix": self.RECORD}}, "is not the episode's environment"),
            (ENV, json.dumps({"env": ENV, "task_id": "billing-dispute/easy/seed-1", "seed": 4}), {"reward_scores": {"llmix": self.RECORD}}, "ground_truth names"),
        ]
        for data_source, truth, extra_info, message in cases:
            with self.assertRaises(ValueError) as caught:
                compute_score(data_source, "", truth, extra_info)
            self.assertIn(message, str(caught.exception))
        failed = {"reward_scores": {"llmix": dict(self.RECORD, outcome=0.0, ended=False, error="connection_failed")}}
        self.assertEqual(compute_score(ENV, "", self.TRUTH, failed), 0.0)
        with self.assertRaises(RuntimeError):
            compute_score(ENV, "", self.TRUTH, failed, on_error="raise")
        with self.assertRaises(ValueError):
            compute_score(ENV, "", self.TRUTH, failed, on_error="ignore")

    def test_tasks_and_settings_are_validated(self) -> None:
        self.assertEqual(parse_task({"env": "e", "task_id": "t", "seed": 3}, "x"), Task("e", "t", 3))
        self.assertEqual(task_of_row({"extra_info": {"env": "e", "task_id": "t", "seed": 3}}), Task("e", "t", 3))
        with self.assertRaises(ValueError):
            parse_task(["e", "t", 3], "x")
        with self.assertRaises(ValueError):
            parse_task({"env": "e", "task_id": "t", "seed": -1}, "x")
        self.assertEqual(settings_from_config({"type": "native", "url": "http://h:1", "timeout": 5, "record": True}).url, "http://h:1")
        for bad in ({"url": ""}, {"timeout": 0}, {"timeout": "5"}, {"record": "yes"}, {"policy_checkpoint": 3}, {"capacity_retries": -1}):
            with self.assertRaises(ValueError, msg=str(bad)):
                settings_from_config(bad)
        with self.assertRaises(ValueError):
            LlmixToolCore({}, "")
        with self.assertRaises(ValueError):
            TRAJECTORIES.bind("")

    def test_assistant_text(self) -> None:
        self.assertEqual(assistant_text([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<think>x</think>\n Hello! "}]), "Hello!")
        self.assertEqual(assistant_text([{"role": "assistant", "content": "reasoning only</think>Done."}]), "Done.")
        self.assertEqual(assistant_text([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}]), "ab")
        self.assertEqual(assistant_text([{"role": "user", "content": "no assistant"}]), "")

    def test_sft_rows_decode_json_and_drop_nulls(self) -> None:
        # A row as pd.read_parquet gives a `verl-sft` file: every message has every field, lists are arrays.
        messages = FakeArray([
            {"role": "user", "content": "Hi", "tool_calls": None, "name": None, "tool_call_id": None},
            {"role": "assistant", "content": "", "tool_calls": FakeArray([{"id": None, "type": "function", "function": {
                "name": "lookup_customer", "arguments": '{"query":"a@b.c"}'}}]), "name": None, "tool_call_id": None},
            {"role": "tool", "content": "cus_1", "tool_calls": None, "name": "lookup_customer", "tool_call_id": None},
            {"role": "assistant", "content": "Done.", "tool_calls": None, "name": None, "tool_call_id": None},
        ])
        tools = FakeArray([{"type": "function", "function": {"name": "lookup_customer", "description": "Find.",
                                                              "parameters": '{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}'}}])
        self.assertEqual(sft_messages(messages), [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "lookup_customer", "arguments": {"query": "a@b.c"}}}]},
            {"role": "tool", "content": "cus_1", "name": "lookup_customer"},
            {"role": "assistant", "content": "Done."},
        ])
        self.assertEqual(sft_tools(tools), [{"type": "function", "function": {"name": "lookup_customer", "description": "Find.", "parameters": {
            "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])
        self.assertIsNone(sft_tools(None))
        self.assertEqual(sft_messages([{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "t", "arguments": "not json"}}]}])[0]
                         ["tool_calls"][0]["function"]["arguments"], "not json")
        dataset = llmix_verl.sft_dataset_class()([{"messages": messages, "tools": tools}])
        rendered = dataset[0]["rendered"]
        self.assertEqual(rendered[1][0]["tool_calls"][0]["function"]["arguments"], {"query": "a@b.c"})
        self.assertEqual(rendered[0][1][0]["function"]["parameters"]["required"], ["query"])
        self.assertIsNone(rendered[1][1])


if __name__ == "__main__":
    unittest.main()
