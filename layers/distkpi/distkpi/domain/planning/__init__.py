"""Suites, and the runs and jobs a delivery plans from them."""
