"""`distkpi node`: what every node of every benchmark job runs (docs/architecture.md)."""
