"""The REST API of runs, unit mappings and evaluations (see ``judgments/api/``)."""
