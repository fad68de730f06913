"""scenario.yaml: its schema (model.py), the hostile-input reader, error locations, bounds."""
