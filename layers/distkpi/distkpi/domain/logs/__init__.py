"""Reading one log as it streams by: the formats, their lines, what a log says."""
