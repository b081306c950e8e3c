"""A drop-in trec_eval 10 (``verity-trec-eval``): its command line, query set, measures and
output byte for byte, on numpy (see ``cli``)."""
