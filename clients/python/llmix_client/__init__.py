"""Python client of the LLMix environment service (standard library only, Python >= 3.9).

    from llmix_client import Client

    client = Client("http://127.0.0.1:8377")
    with client.create_session("billing-dispute", task_id, seed=7) as session:
        result = session.message("Hello! How can I help?")

Adapters: ``llmix_client.gym`` (Gymnasium, imported lazily) and ``llmix_client.trl`` (TRL
``GRPOTrainer(environment_factory=...)``). See docs/python.md.
"""
from .client import (
    DEFAULT_URL,
    AuthError,
    CapacityError,
    Client,
    ClientTimeoutError,
    ConnectionFailedError,
    FleetUnavailableError,
    LifecycleError,
    LlmixError,
    NotFoundError,
    ServerError,
    Session,
    SessionBusyError,
    StepConflictError,
    StepResult,
    StepTimeoutError,
    ValidationError,
    error_from_response,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_URL",
    "AuthError",
    "CapacityError",
    "Client",
    "ClientTimeoutError",
    "ConnectionFailedError",
    "FleetUnavailableError",
    "LifecycleError",
    "LlmixError",
    "NotFoundError",
    "ServerError",
    "Session",
    "SessionBusyError",
    "StepConflictError",
    "StepResult",
    "StepTimeoutError",
    "ValidationError",
    "error_from_response",
    "__version__",
]
