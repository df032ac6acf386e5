"""What makes a run reproducible (same seed, same data: same global model, bit for bit) and its waits interruptible.

Flower 1.42 leaves three things to chance that changed a simulation's model from run to run (fresh-user report:
round APs 0.5336/0.6130 against 0.5372/0.6199, different ``model_sha256``):

- its ``SimpleClientManager.sample`` draws institutions with the unseeded ``random`` module from a dict filled in
  node-registration order, and node ids are random per run: which institution sends the initial weights (FedAvg
  asks "one random client"; the account MLP's initial weights hold that bank's standardisation moments), and in
  which order institutions are asked;
- replies are aggregated in the order they arrive (Ray's scheduling), and float32 sums depend on the order;
- SecAgg+ quantises every update with stochastic rounding from NumPy's global generator.

:class:`OrderedClientManager` orders institutions as configured (simulation: the ``[[institutions]]`` order, from
the link state's registration order; deployment: by node id) and draws samples from ``random.Random`` seeded with
the run's ``seed`` and the draw's number; :func:`ordered_results` sorts replies by content (institution, example
count, the bytes of the arrays) before aggregation; :func:`seeded_rounding_mod` seeds NumPy's global generator per
message from the run's seed, round, message type and the node's config, **only when differential privacy is off**
(DP noise is drawn from that same generator and must stay unpredictable: a DP run is not reproducible, by design).

Its ``wait_for`` also gives up once the simulation engine has stopped (``stop``): Flower's waits up to a day for
institutions to connect, which kept a ServerApp thread (non-daemon) alive after a failed engine start.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .errors import SimulationStopped

WAIT_SLICE_S = 0.25
"""How often a wait for institutions checks the stop event."""


def node_order(grid: Any) -> Callable[[int], tuple[int, int]]:
    """A sort key for node ids: ``(registration index, node id)``. Flower's simulation engine registers node ``i``
    for ``[[institutions]]`` entry ``i`` in order, and its in-memory link state lists nodes in registration order
    (``state.get_node_info()``); elsewhere (deployment, or a grid without that state) nodes sort by id."""
    state = getattr(grid, "state", None)
    ranks: dict[int, int] = {}

    def key(node_id: int) -> tuple[int, int]:
        if state is not None and node_id not in ranks:
            try:
                for index, info in enumerate(state.get_node_info()):
                    ranks.setdefault(int(info.node_id), index)
            except Exception:  # noqa: BLE001 - another state implementation: sort by id
                pass
        return ranks.get(int(node_id), 1 << 62), int(node_id)

    return key


def _flower_client_manager() -> type:
    from flwr.server.client_manager import SimpleClientManager

    return SimpleClientManager


def make_client_manager(order: Callable[[int], Any], seed: int, stop: threading.Event | None = None) -> Any:
    """An :class:`OrderedClientManager` (a Flower ``SimpleClientManager``; see the module docstring)."""
    base = _flower_client_manager()

    class OrderedClientManager(base):  # type: ignore[misc, valid-type]
        """Flower's client manager with institutions in configured order, seeded samples, and a wait that ends when
        ``stop`` is set (raises :class:`SimulationStopped`)."""

        def __init__(self) -> None:
            super().__init__()
            self.draws = 0

        def wait_for(self, num_clients: int, timeout: int = 86400) -> bool:
            deadline = time.monotonic() + timeout
            while True:
                with self._cv:
                    if self._cv.wait_for(lambda: len(self.clients) >= num_clients,
                                         timeout=max(0.0, min(WAIT_SLICE_S, deadline - time.monotonic()))):
                        return True
                if stop is not None and stop.is_set():
                    raise SimulationStopped(f"the simulation engine stopped while the ServerApp waited for "
                                            f"{num_clients} institution(s) to connect ({len(self.clients)} had)")
                if time.monotonic() >= deadline:
                    return False

        def ordered(self) -> list[str]:
            """The connected institutions' client ids in configured order."""
            return sorted(self.clients, key=lambda cid: order(self.clients[cid].node_id))

        def sample(self, num_clients: int, min_num_clients: int | None = None, criterion: Any = None) -> list:
            self.wait_for(num_clients if min_num_clients is None else min_num_clients)
            available = [cid for cid in self.ordered()
                         if criterion is None or criterion.select(self.clients[cid])]
            self.draws += 1
            if num_clients > len(available):
                return []
            chosen = set(seeded_draw(seed, self.draws, available, num_clients))
            return [self.clients[cid] for cid in available if cid in chosen]

    return OrderedClientManager()


def seeded_draw(seed: int, draw: int, population: list, k: int) -> list:
    """``k`` of ``population`` (in its order) drawn by ``random.Random`` seeded with the run's ``seed`` and the
    draw's number (1 for the first ``sample`` of a run: the institution asked for the initial weights)."""
    return random.Random(f"{seed}:{draw}").sample(list(population), k)


def _digest(parameters: Any) -> str:
    h = hashlib.sha256()
    for tensor in getattr(parameters, "tensors", []) or []:
        h.update(tensor)
    return h.hexdigest()


def _institution(res: Any) -> str:
    return str((getattr(res, "metrics", None) or {}).get("institution", ""))


def ordered_results(results: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Fit or evaluation replies ``(proxy, res)`` sorted by content: institution name, example count, then (fit)
    the arrays' bytes or (evaluation) loss and metrics: the same replies always aggregate in the same order, whatever
    order they arrived in."""
    def key(item: tuple[Any, Any]) -> tuple:
        _, res = item
        parameters = getattr(res, "parameters", None)
        rest = _digest(parameters) if parameters is not None else repr(
            (getattr(res, "loss", None), sorted((getattr(res, "metrics", None) or {}).items(), key=str)))
        return _institution(res), int(getattr(res, "num_examples", 0)), rest

    return sorted(results, key=key)


def message_seed(seed: int, *parts: Any) -> int:
    """A 32-bit seed from the run's seed and ``parts`` (round, message type, node config)."""
    text = ":".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def seeded_rounding_mod(seed: int) -> Callable[..., Any]:
    """A Flower client mod that seeds NumPy's global generator (which SecAgg+'s stochastic rounding draws from) for
    each message from ``seed``, the message's round (``group_id``) and type, and the node's config; outermost, so
    the whole message is handled from that state. Use it only without differential privacy."""
    def mod(msg: Any, context: Any, call_next: Callable[..., Any]) -> Any:
        import numpy as np

        node = sorted((str(k), str(v)) for k, v in dict(context.node_config).items())
        np.random.seed(message_seed(seed, msg.metadata.group_id, msg.metadata.message_type, node))
        try:
            return call_next(msg, context)
        finally:
            np.random.seed()  # back to fresh entropy for whatever else runs in this process

    return mod
