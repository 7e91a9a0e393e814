"""Plugin entry module (filled by its issue)."""
