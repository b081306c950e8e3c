#!/usr/bin/env bash
# Mutation testing (mutmut 3) of the scoring engine and the services that keep the
# invariants: labels, statuses, snapshots, the review queue and the imports.
#
#   scripts/mutate.sh                    # every group, then the summary
#   scripts/mutate.sh engine             # one group: engine | services | snapshots
#   scripts/mutate.sh --summary          # the summary of the last runs only
#   MUTATE_BUDGET=1200 MUTATE_JOBS=1 scripts/mutate.sh services
#   MUTATE_AGAIN=1 scripts/mutate.sh engine   # try the survivors again (after new tests)
#   MUTATE_AGAIN=1 MUTATE_ONLY='engine\.cli\.' scripts/mutate.sh engine   # only those matching
#   MUTATE_DATABASE_URL=postgres://postgres@127.0.0.1:5432/verity_mutate scripts/mutate.sh services
#       # services on PostgreSQL, test database reused: ~10x faster than SQLite here
#
# The generated-case oracles (tests/engine/test_differential.py, test_bounds_oracle.py)
# run on MUTATE_ORACLE_CASES of their 250 cases (default 20) while mutating, and
# the two tests that start a new interpreter are skipped (VERITY_MUTATING=1).
# Each group runs in its own copy of the project (var/mutate/GROUP/, not in git) with its
# own mutmut configuration, so that each mutant is tried against the tests of its group
# only (mutmut narrows that further to the tests that call the mutated function). A group
# stops after MUTATE_BUDGET seconds (default 1500) and runs at nice 10; its results are
# kept, and running it again resumes with the mutants not tried yet. The summary counts
# killed / survived per module, and takes the survivors that docs/MUTATION.md lists as
# equivalent (with the reason) out of the survivors.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY="$ROOT/.venv/bin/python"
MUTMUT="$ROOT/.venv/bin/mutmut"
BUDGET=${MUTATE_BUDGET:-1500}
JOBS=${MUTATE_JOBS:-2}

engine_config() {
  cat <<'EOF'
source_paths = ["config", "judgments", "scoring"]
only_mutate = ["scorer/verity_eval/*"]
also_copy = ["fixtures", "templates", "manage.py", "jobs", "judges"]
pytest_add_cli_args_test_selection = ["tests/engine"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]
EOF
}

services_config() {
  cat <<'EOF'
source_paths = ["config", "judgments", "scoring"]
also_copy = ["fixtures", "templates", "manage.py", "jobs", "judges"]
only_mutate = [
  "judgments/services/judgments.py",
  "judgments/services/queries.py",
  "judgments/services/snapshots.py",
  "judgments/services/snapshot_blocks.py",
  "judgments/services/queue.py",
  "judgments/services/imports.py",
  "judgments/services/import_checks.py",
  "judgments/services/import_writes.py",
]
pytest_add_cli_args_test_selection = [
  "tests/judgments/test_services.py",
  "tests/judgments/test_queue.py",
  "tests/judgments/test_snapshots.py",
  "tests/judgments/test_imports.py",
  "tests/judgments/test_models.py",
  "tests/judgments/test_failures.py",
  "tests/judgments/test_assessments.py",
  "tests/judgments/test_queue_count.py",
  "tests/judgments/test_import_trec.py",
  "tests/judges/test_model_labels.py",
  "tests/judgments/test_snapshot_sharing.py",
]
EOF
  _database_args
}

# The freeze alone: its services, the canonical form and the selectors that read it back,
# against the snapshot tests (a group of its own, so that a short run covers all of it).
snapshots_config() {
  cat <<'EOF'
source_paths = ["config", "judgments", "scoring"]
also_copy = ["fixtures", "templates", "manage.py", "jobs", "judges"]
only_mutate = [
  "judgments/services/snapshots.py",
  "judgments/services/snapshot_blocks.py",
  "judgments/snapshots.py",
  "judgments/selectors/snapshots.py",
]
pytest_add_cli_args_test_selection = [
  "tests/judgments/test_snapshots.py",
  "tests/judgments/test_snapshot_sharing.py",
  "tests/judgments/test_failures.py",
  "tests/judgments/test_assessments.py",
  "tests/judgments/test_assessments_migration.py",
  "tests/judges/test_model_labels.py",
]
EOF
  _database_args
}

_database_args() {
  # Each mutant's tests run in a fresh pytest session: on PostgreSQL with --reuse-db the
  # test database is migrated once, not once per mutant (SQLite's is in memory: ~3 s each).
  if [[ -n "${MUTATE_DATABASE_URL:-}" ]]; then
    echo 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x", "--reuse-db"]'
  else
    echo 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]'
  fi
}

run_group() {
  local group=$1 dir="$ROOT/var/mutate/$1"
  mkdir -p "$dir"
  # A fresh copy of the sources and tests; mutmut's own mutants/ (results) is kept.
  rsync -a --delete --exclude mutants --exclude .git --exclude .venv --exclude var \
    --exclude __pycache__ --exclude node_modules --exclude test-artifacts "$ROOT/" "$dir/"
  { echo; echo "[tool.mutmut]"; "${group}_config"; } >>"$dir/pyproject.toml"
  local names=()
  if [[ "${MUTATE_AGAIN:-0}" == 1 ]]; then
    # mutmut keeps a verdict once given: name the survivors (and the untried) to try them.
    mapfile -t names < <("$PY" scripts/mutation_summary.py --survivors "$dir" |
      grep -E -- "${MUTATE_ONLY:-.}" || true)
  fi
  echo "== mutating $group (budget ${BUDGET}s, $JOBS workers, nice 10, ${#names[@]} named)"
  local db=()
  if [[ $group != engine && -n "${MUTATE_DATABASE_URL:-}" ]]; then
    db=("DATABASE_URL=$MUTATE_DATABASE_URL")
  fi
  # The copy lives in var/mutate/GROUP/mutants/, where ../shared is not the project's:
  # name it, so that the trec_eval conformance oracles run against every mutant.
  local shared=${VERITY_SHARED:-$ROOT/../shared}
  [[ -d $shared ]] && db+=("VERITY_SHARED=$(cd "$shared" && pwd -P)")
  (cd "$dir" && env "${db[@]}" VERITY_MUTATING=1 VERITY_ORACLE_CASES=${MUTATE_ORACLE_CASES:-20} nice -n 10 timeout -s INT -k 30 "$BUDGET" "$MUTMUT" run --max-children "$JOBS" "${names[@]}") \
    >"$dir/mutmut.log" 2>&1 || echo "   (stopped: budget reached or mutmut failed; see $dir/mutmut.log)"
  tail -n 3 "$dir/mutmut.log" | tr '\r' '\n' | tail -n 2
}

if [[ "${1:-}" != "--summary" ]]; then
  groups=("$@")
  [[ ${#groups[@]} -eq 0 ]] && groups=(engine services snapshots)
  for g in "${groups[@]}"; do
    case $g in
      engine | services | snapshots) run_group "$g" ;;
      *) echo "unknown group $g" >&2; exit 2 ;;
    esac
  done
fi
"$PY" scripts/mutation_summary.py "$ROOT/var/mutate" docs/MUTATION.md
