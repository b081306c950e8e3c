"""The REST API of collections, queries, items, judgments, review tasks and snapshots.

``scoring/api/`` adds runs, unit mappings and evaluations under the same URL shape,
``/api/collections/<slug>/…``; both are mounted by ``config/urls.py``.
"""
