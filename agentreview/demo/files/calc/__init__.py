"""A tiny calculator the demo reviews."""


def add(a: float, b: float) -> float:
    return a + b
