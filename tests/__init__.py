# A package so that test modules are imported as tests.<app>.test_*: same-named files in
# tests/judgments and tests/scoring cannot collide, and tests/judgments never shadows the
# judgments app on sys.path.
