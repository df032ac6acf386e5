"""Built-in plugin that records task events in the audit log (filled in by the compliance work)."""
