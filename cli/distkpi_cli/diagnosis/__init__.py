"""Why a run regressed: profiler traces of base and head reduced to where a step's time went
(compute, communication, exposed communication, idle, data loading, other), per role and rank.

Pure and standard-library only. It lives outside the Lambda layer until a handler needs it
(the layer holds its handlers' import closure and nothing else)."""
