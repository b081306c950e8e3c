"""Background jobs: Verity's record of each long operation (``Job``), its progress, its
worker's heartbeat, and the page and API that show them.

The bottom layer: it knows nothing of collections' contents, runs or snapshots. The apps
above define their tasks (``judgments/tasks.py``, ``scoring/tasks.py``) with Django's
Tasks API and run their services through ``jobs.runner.run_job``.
"""
