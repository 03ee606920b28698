"""One module per `distkpi` command: each has `add(sub)`, which registers its parser."""
