"""One module per log family; registry.py lists them."""
