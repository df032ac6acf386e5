"""``sectorflow serve``: every registered task as a FastAPI endpoint (needs the ``serve`` extra)."""
