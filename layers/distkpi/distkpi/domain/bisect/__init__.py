"""Bisecting a branch's regression: the first-parent line between its good and bad commits,
each step's side, and what to run next."""
