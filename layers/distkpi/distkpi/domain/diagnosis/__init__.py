"""Why a run regressed: profiler traces of base and head reduced to where a step's time went
(compute, communication, exposed communication, idle, data loading, other), per role and rank.

Pure and standard-library only: the collector reduces a diagnosis job's traces with it, and
`distkpi diagnose` a folder of them on disk."""
