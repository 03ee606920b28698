"""`distkpi`: the command line, the local stack that runs the pipeline on one machine,
and `distkpi node`, what every node of a benchmark job runs. None of it is in the
Lambda layer."""
