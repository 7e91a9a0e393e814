"""Built-in (filled by its issue)."""
