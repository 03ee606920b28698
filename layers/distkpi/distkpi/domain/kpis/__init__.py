"""The KPI engine: a run folder's manifests and logs to each config's KPIs, and a run's."""
