"""Federated training of plugins' models with Flower (see docs; built in a later issue)."""
