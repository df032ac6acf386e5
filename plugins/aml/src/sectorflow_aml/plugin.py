"""Hook implementations of the aml plugin (filled in by the AML work)."""
