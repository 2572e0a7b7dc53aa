"""Store: baseline files and compiled artifacts, written atomically."""
