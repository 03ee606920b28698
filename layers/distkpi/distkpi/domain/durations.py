"""A time in seconds as people read it: whole seconds from 10 s on, two significant digits
below (a 0.07 s time to accuracy is `0.07`, not `0`)."""


def short_seconds(seconds: float) -> str:
    return f"{seconds:.0f}" if abs(seconds) >= 9.95 else f"{seconds:.2g}"
