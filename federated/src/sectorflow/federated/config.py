"""``federation.toml``: what a federated run trains, how rounds aggregate, and which privacy protections apply.

Example (every key optional except ``task``; defaults shown)::

    task = "aml"                 # the task whose trainable model is trained
    model = ""                   # trainable name, when a task offers several
    rounds = 3
    local_epochs = 1
    lr = 0.002
    batch_size = 512
    metric = ""                  # validation metric shown per round and compared (default: the trainable's first
                                 # of average_precision, f1, accuracy)
    bundle = ""                  # where the run writes the global model's bundle (the task's trainable must offer
                                 # an export): in simulation `sectorflow federate` writes it (`--out` overrides
                                 # it), in deployment the coordinator's ServerApp
    keep = "best"                # which round's global model the bundle / --weights get: best (the round with the
                                 # best validation `metric`) | last

    [strategy]
    name = "fedavg"              # fedavg | fedprox | fedadam
    fraction_fit = 1.0           # share of available institutions asked to train each round
    fraction_evaluate = 1.0
    min_fit_clients = 2          # a round goes ahead with this many trainers ...
    min_evaluate_clients = 2
    min_available_clients = 2    # ... once this many institutions are connected
    proximal_mu = 0.01           # FedProx (Li et al., MLSys 2020)
    server_lr = 0.01             # FedAdam eta (Reddi et al., ICLR 2021)
    tau = 0.001                  # FedAdam tau

    [secagg]                     # SecAgg+ (Bell et al., CCS 2020); Flower's SecAggPlusWorkflow
    enabled = false
    num_shares = 3
    reconstruction_threshold = 2
    clipping_range = 8.0         # every value sent is clipped to [-8, 8] before masking
    max_weight = 1000.0          # an institution weighs min(its examples, max_weight) in the average

    [dp]                         # off | client_clipping (central DP, Andrew et al. 2021) | local (LocalDpMod)
    mode = "off"
    clipping_norm = 1.0
    noise_multiplier = 0.5       # client_clipping
    epsilon = 10.0               # local: per round
    delta = 1e-5
    utility_margin = 0.03        # warn when the run with DP is worse than the same run without by more than this
    compare_without = true       # simulation: also run without DP (same seed) to measure what DP costs

    [[institutions]]             # simulation: one table per institution, passed to the trainable's build()
    data = "../shared/data/amlsim_sample"
    bank = 0
    num_banks = 3

Raises :class:`sectorflow.ConfigError` naming the key on anything it cannot use.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from sectorflow import ConfigError


class StrategyConfig(BaseModel):
    """Aggregation strategy and participation thresholds (names as in Flower)."""

    model_config = ConfigDict(extra="forbid")
    name: Literal["fedavg", "fedprox", "fedadam"] = "fedavg"
    fraction_fit: float = Field(1.0, gt=0, le=1)
    fraction_evaluate: float = Field(1.0, ge=0, le=1)
    min_fit_clients: int = Field(2, ge=1)
    min_evaluate_clients: int = Field(2, ge=0)
    min_available_clients: int = Field(2, ge=1)
    proximal_mu: float = Field(0.01, ge=0)
    server_lr: float = Field(0.01, gt=0)
    tau: float = Field(1e-3, gt=0)


class SecAggConfig(BaseModel):
    """SecAgg+ settings (``flwr.server.workflow.SecAggPlusWorkflow``)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = False
    num_shares: int = Field(3, ge=2)
    reconstruction_threshold: int = Field(2, ge=2)
    clipping_range: float = Field(8.0, gt=0)
    max_weight: float = Field(1000.0, gt=0)

    @model_validator(mode="after")
    def _threshold(self) -> SecAggConfig:
        if self.reconstruction_threshold > self.num_shares:
            raise ValueError("reconstruction_threshold must not exceed num_shares")
        return self


class DPConfig(BaseModel):
    """Differential privacy: ``client_clipping`` (each institution clips its update to ``clipping_norm``; the server
    adds Gaussian noise ``noise_multiplier * clipping_norm``) or ``local`` (each institution clips and adds its own
    noise for (``epsilon``, ``delta``) per round: Flower's ``LocalDpMod``)."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["off", "client_clipping", "local"] = "off"
    clipping_norm: float = Field(1.0, gt=0)
    noise_multiplier: float = Field(0.5, ge=0)
    epsilon: float = Field(10.0, gt=0)
    delta: float = Field(1e-5, gt=0, lt=1)
    utility_margin: float = Field(0.03, ge=0)
    compare_without: bool = True



class FederationConfig(BaseModel):
    """A whole ``federation.toml`` (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")
    task: str
    model: str = ""
    rounds: int = Field(3, ge=1)
    local_epochs: int = Field(1, ge=1)
    lr: float = Field(2e-3, gt=0)
    batch_size: int = Field(512, ge=1)
    seed: int = 20211
    strategy: StrategyConfig = Field(default_factory=StrategyConfig)
    secagg: SecAggConfig = Field(default_factory=SecAggConfig)
    dp: DPConfig = Field(default_factory=DPConfig)
    institutions: list[dict[str, Any]] = Field(default_factory=list)
    num_cpus_per_client: float = Field(1.0, gt=0)
    metric: str = ""
    bundle: str = ""
    keep: Literal["best", "last"] = "best"
    _folder: Path | None = PrivateAttr(default=None)
    """The folder of the ``federation.toml`` it was read from (:func:`load_config`), which relative paths in it
    are taken relative to; ``None`` (a mapping given to :func:`parse_config`): the current directory."""

    @model_validator(mode="after")
    def _consistent(self) -> FederationConfig:
        if self.secagg.enabled and self.dp.mode == "client_clipping":
            raise ValueError("secagg with dp.mode = 'client_clipping' is not supported: use dp.mode = 'local'")
        return self

    def fit_config(self, server_round: int) -> dict[str, Any]:
        """What each institution's ``Trainable.fit`` receives in round ``server_round``."""
        cfg: dict[str, Any] = {"server_round": server_round, "local_epochs": self.local_epochs, "lr": self.lr,
                               "batch_size": self.batch_size, "seed": self.seed}
        if self.strategy.name == "fedprox":
            cfg["proximal_mu"] = self.strategy.proximal_mu
        return cfg


def parse_config(data: dict[str, Any], where: str = "federation config") -> FederationConfig:
    """Validate a configuration mapping.

    Raises:
        ConfigError: a key is unknown or a value out of range (the message names the key).
    """
    try:
        return FederationConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise ConfigError(f"{where}: {problems}", details={"errors": exc.errors(include_url=False)}) from None


TABLES: dict[str, type[BaseModel]] = {"strategy": StrategyConfig, "secagg": SecAggConfig, "dp": DPConfig}


def _problem(error: Any) -> str:
    """One validation error as text; an unknown key names its table, the closest accepted key and all of them."""
    loc = [str(p) for p in error["loc"]]
    where = ".".join(loc) or "(top)"
    if error["type"] != "extra_forbidden":
        return f"{where}: {error['msg']}"
    model = TABLES.get(loc[0], FederationConfig) if len(loc) > 1 else FederationConfig
    place = f"in the {loc[0]} table" if len(loc) > 1 else "at the top level"
    accepted = sorted(model.model_fields)
    close = difflib.get_close_matches(loc[-1], accepted, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{where}: unknown key {loc[-1]!r} {place}{hint}; accepted keys: {', '.join(accepted)}"


def load_config(path: str | Path) -> FederationConfig:
    """Read and validate ``federation.toml``. Relative paths in it are taken relative to the file's folder, as
    users expect of a configuration file (until 3 Dec 2026: to the current directory, so the same file named other
    data when run from elsewhere): ``bundle`` here, the institutions' file keys (the trainable's
    :attr:`~sectorflow.TrainableSpec.path_keys`) by :func:`resolve_paths` once the trainable is known.

    Raises:
        ConfigError: missing file, invalid TOML, or an invalid key (named in the message).
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"Federation config {path} not found.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    cfg = parse_config(data, str(path))
    cfg._folder = Path(os.path.abspath(path)).parent  # ../fed/federation.toml: without the ..
    if cfg.bundle:
        cfg.bundle = str(_against(cfg._folder, cfg.bundle))
    return cfg


def _against(folder: Path, value: str) -> Path:
    """``value`` (a path as written in the config) taken relative to ``folder`` unless absolute (``~`` expanded)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else folder / path


def resolve_paths(cfg: FederationConfig, path_keys: tuple[str, ...]) -> None:
    """Make the relative paths under ``path_keys`` of each ``[[institutions]]`` table relative to the folder of the
    ``federation.toml`` ``cfg`` was read from (in place; nothing for a config given as a mapping). Values that are
    not text (a table, a number) or are empty are left as they are."""
    if cfg._folder is None:
        return
    for institution in cfg.institutions:
        for key in path_keys:
            value = institution.get(key)
            if isinstance(value, str) and value.strip():
                institution[key] = str(_against(cfg._folder, value))
