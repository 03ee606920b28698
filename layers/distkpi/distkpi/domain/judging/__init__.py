"""Judging KPIs against their history: the suite's verdict settings apart from the statistics."""
