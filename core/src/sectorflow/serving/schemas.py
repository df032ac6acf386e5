"""Request and response models of the HTTP API, built from each task's own pydantic models."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from .. import ResultMeta, TaskSpec


class Problem(BaseModel):
    """One thing wrong with a request: where (``field``, dotted, e.g. ``inputs.0.amount``) and why."""

    field: str | None = None
    reason: str
    row: int | None = None


class ErrorBody(BaseModel):
    """Body of every error response."""

    error: str = Field(description="Error class, e.g. InvalidInputError, UnknownTaskError, RateLimited.")
    message: str = Field(description="What is wrong and what to do about it.")
    details: Any = Field(default=None, description="Machine-readable detail: a list of Problem for 422.")


class ModelInfo(BaseModel):
    """The model bundle serving a task."""

    name: str | None = None
    version: str | None = None
    bundle_sha256: str | None = None


class TaskListing(BaseModel):
    """One row of ``GET /v1/tasks``."""

    task: str
    plugin: str
    version: str
    description: str
    languages: list[str]
    status: str = Field(description="loading, ready or failed.")
    error: str | None = None
    model: ModelInfo | None = None
    max_batch_size: int
    max_queue_delay_ms: float
    allowed: bool = Field(description="Whether the calling key may call this task.")


class ReloadRequest(BaseModel):
    """Body of ``POST /v1/admin/models/{task}/reload``."""

    model_config = ConfigDict(extra="forbid")
    task_path: str | None = Field(default=None, min_length=1, max_length=4096,
                                  description="Bundle folder on the server; omitted: the task's configured bundle.")

    @field_validator("task_path")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        # a NUL made Path.resolve() raise ValueError (500) when allowed_bundle_roots is set
        if value is not None and "\x00" in value:
            raise ValueError("task_path holds a NUL character (\\u0000): give the bundle folder's path")
        return value


class ReloadResponse(BaseModel):
    task: str
    previous: ResultMeta
    current: ResultMeta


class StateResetRequest(BaseModel):
    """Body of ``POST /v1/admin/state/{task}/reset``: whose state to forget."""

    model_config = ConfigDict(extra="forbid")
    tenant: str | None = Field(default=None, min_length=1, max_length=256,
                               description="The tenant whose state to forget; null: the default tenant (keys "
                                           "without a tenant). A key with a tenant may leave it out (its own tenant) "
                                           "or name its own; a key without a tenant must name it.")


class StateResetResponse(BaseModel):
    task: str
    tenant: str | None = Field(description="The tenant whose state was forgotten (null: the default tenant).")
    had_state: bool = Field(description="Whether that tenant held state (had called the task since its first call "
                                        "or its last reset).")


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def request_model(spec: TaskSpec, max_items: int) -> type[BaseModel]:
    """``{"inputs": [<input item>, ...]}`` with 1 to ``max_items`` items of the task's input model."""
    return create_model(
        f"{camel(spec.name)}Request",
        __config__=ConfigDict(extra="forbid"),
        inputs=(Annotated[list[spec.input_model], Field(min_length=1, max_length=max_items,  # type: ignore[name-defined]
                                                         description=f"1 to {max_items} items.")], ...),
    )


def response_model(spec: TaskSpec) -> type[BaseModel]:
    """``{"outputs": [<output item>, ...], "call_id": str}``, outputs in the order of the inputs."""
    return create_model(
        f"{camel(spec.name)}Response",
        outputs=(list[spec.output_model], ...),  # type: ignore[name-defined]
        call_id=(str, Field(description="request_id of the task call (and audit event) that produced the outputs; "
                                        "shared by requests merged into one call.")),
    )
