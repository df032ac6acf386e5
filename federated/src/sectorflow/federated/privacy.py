"""The privacy budget of a federated run with differential privacy, reported with every run.

- ``client_clipping`` (central DP with client-side clipping, Andrew et al. 2021 / McMahan et al. ICLR 2018):
  each round the server adds Gaussian noise of ``noise_multiplier * clipping_norm`` to the sum of clipped updates
  of a ``fraction_fit`` sample of institutions. Institution-level (epsilon, delta) over all rounds from the RDP
  accountant of Google's ``dp-accounting`` (Poisson-sampled Gaussian mechanism, composed ``rounds`` times; the
  sampling is approximated as Poisson with rate ``fraction_fit``).
- ``local`` (Flower ``LocalDpMod``): each institution clips its update to ``clipping_norm`` and adds Gaussian
  noise for (``epsilon``, ``delta``) per round (Dwork & Roth 2014, Theorem A.1); over ``rounds`` rounds, basic
  composition gives (``rounds * epsilon``, ``rounds * delta``).
"""

from __future__ import annotations

from typing import Any

from .config import DPConfig


def privacy_budget(dp: DPConfig, rounds: int, fraction_fit: float = 1.0) -> dict[str, Any] | None:
    """``{"mode", "epsilon", "delta", "rounds", "accountant", ...}`` for the whole run, or ``None`` when DP is off.

    ``epsilon`` is ``inf`` for ``client_clipping`` with ``noise_multiplier = 0`` (clipping alone is no DP).
    """
    if dp.mode == "off":
        return None
    if dp.mode == "local":
        return {"mode": "local", "epsilon": rounds * dp.epsilon, "delta": rounds * dp.delta, "rounds": rounds,
                "per_round": {"epsilon": dp.epsilon, "delta": dp.delta}, "clipping_norm": dp.clipping_norm,
                "accountant": "basic composition of per-round Gaussian local DP (LocalDpMod)",
                "unit": "one institution's update"}
    if dp.noise_multiplier == 0:
        epsilon = float("inf")
    else:
        import dp_accounting
        from dp_accounting.rdp import RdpAccountant

        event = dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(fraction_fit, dp_accounting.GaussianDpEvent(dp.noise_multiplier)),
            rounds)
        accountant = RdpAccountant()
        accountant.compose(event)
        epsilon = float(accountant.get_epsilon(dp.delta))
    return {"mode": "client_clipping", "epsilon": epsilon, "delta": dp.delta, "rounds": rounds,
            "noise_multiplier": dp.noise_multiplier, "clipping_norm": dp.clipping_norm, "sampling_rate": fraction_fit,
            "accountant": "RDP (dp-accounting), Poisson-sampled Gaussian", "unit": "one institution's participation"}
