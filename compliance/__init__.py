"""Tamper-evident audit log (see docs; built in a later issue)."""
