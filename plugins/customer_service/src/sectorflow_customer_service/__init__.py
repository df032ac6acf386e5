"""sectorflow plugin ``customer_service``: intents, out-of-scope, FAQ answers, escalation and language (zh/en)."""

__version__ = "0.1.0"
