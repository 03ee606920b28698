"""`distkpi diagnose`: a run folder's traces on disk (folder), reduced by the layer's
domain/diagnosis."""
