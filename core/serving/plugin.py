"""Built-in plugin that adds ``sectorflow serve`` (filled in by the serving work)."""
