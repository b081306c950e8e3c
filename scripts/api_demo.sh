#!/usr/bin/env bash
# The API's acceptance flow, with curl only, against a throwaway server and jobs worker:
#   an evaluator's token reads v1 of recall-example (the demo froze it), exports its qrels
#   (byte-identical to manage.py export_qrels), uploads fixtures/recall-example/run.trec
#   as a background job (202 + Location, polled until done), scores it against v1 at k=2
#   and reads macro R@2 = 4/9 and pooled R@2 = 2/5; a reviewer's token is refused the
#   upload (403); a stranger's gets 404 for the collection.
#
#   scripts/api_demo.sh     # PORT=8123 by default; a fresh VERITY_VAR_DIR, removed at the
#                           # end (KEEP=1 keeps it, with the server log and the responses)
#
# Exits non-zero at the first step that does not answer as expected. Needs curl; the
# JSON is read with the project's own Python (no jq needed).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${PORT:-8123}"
BASE="http://127.0.0.1:$PORT"
PY=.venv/bin/python
VERITY_VAR_DIR="$(mktemp -d -t verity-api-demo-XXXXXX)"
export VERITY_VAR_DIR DEBUG=1 AXES_ENABLED=1
WORK="$VERITY_VAR_DIR/demo"
mkdir -p "$WORK"

say() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }
json() { "$PY" -c "import json, sys; d = json.load(open(sys.argv[1])); print($1)" "$2"; }

say "set-up: migrate, load_demo, a stranger with no membership, tokens ($VERITY_VAR_DIR)"
"$PY" manage.py migrate --no-input -v0
"$PY" manage.py load_demo >/dev/null
"$PY" manage.py shell -v 0 -c \
  "from django.contrib.auth import get_user_model; get_user_model().objects.create_user('stranger')"
EVALUATOR=$("$PY" manage.py api_token create evaluator --name api-demo --scope admin 2>/dev/null)
REVIEWER=$("$PY" manage.py api_token create reviewer --name api-demo --scope admin 2>/dev/null)
STRANGER=$("$PY" manage.py api_token create stranger --name api-demo --scope admin 2>/dev/null)
echo "tokens: evaluator ${EVALUATOR:0:6}…, reviewer ${REVIEWER:0:6}…, stranger ${STRANGER:0:6}…"

"$PY" manage.py runserver "127.0.0.1:$PORT" --noreload >"$WORK/server.log" 2>&1 &
SERVER=$!
"$PY" manage.py jobs_worker --interval 0.2 >"$WORK/worker.log" 2>&1 &
WORKER=$!
cleanup() {
  kill "$SERVER" "$WORKER" 2>/dev/null || true
  wait "$SERVER" "$WORKER" 2>/dev/null || true
  if [ -z "${KEEP:-}" ]; then rm -rf "$VERITY_VAR_DIR"; else echo "kept $VERITY_VAR_DIR"; fi
}
trap cleanup EXIT
for _ in $(seq 300); do curl -fsS "$BASE/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
show "curl $BASE/healthz"
curl -fsS "$BASE/healthz"; echo

C="$BASE/api/collections/recall-example"
AUTH=(-H "Authorization: Token $EVALUATOR")

say "freeze (evaluator): the demo froze v1 already, and nothing changed since"
show "curl -X POST -H 'Authorization: Token …' -H 'Content-Type: application/json' -d '{\"note\": \"v1\"}' $C/snapshots/"
code=$(curl -sS -o "$WORK/v1.json" -w '%{http_code}' -X POST "${AUTH[@]}" \
  -H 'Content-Type: application/json' -d '{"note": "v1"}' "$C/snapshots/")
echo "HTTP $code: $(json '"v%d sha256:%s created=%s" % (d["number"], d["content_hash"], d["created"])' "$WORK/v1.json")"
[ "$code" = 200 ]
HASH=$(json 'd["content_hash"]' "$WORK/v1.json")

say "export v1's qrels (streamed) and compare with manage.py export_qrels"
show "curl -D - -H 'Authorization: Token …' $C/snapshots/1/qrels"
curl -fsS -D "$WORK/qrels.headers" "${AUTH[@]}" "$C/snapshots/1/qrels" -o "$WORK/v1.api.qrels"
grep -i -E '^(HTTP|content-type|etag)' "$WORK/qrels.headers"
cat "$WORK/v1.api.qrels"
"$PY" manage.py export_qrels recall-example --snapshot 1 >"$WORK/v1.command.qrels"
cmp "$WORK/v1.api.qrels" "$WORK/v1.command.qrels"
echo "byte-identical to manage.py export_qrels recall-example --snapshot 1"
grep -qi "^etag: \"sha256:$HASH\"" "$WORK/qrels.headers"
curl -fsS "${AUTH[@]}" "$C/snapshots/1/qrels?format=jsonl" -o "$WORK/v1.jsonl"
echo "sha256 of ?format=jsonl: $(sha256sum "$WORK/v1.jsonl" | cut -d' ' -f1) (the snapshot's hash: $HASH)"
[ "$(sha256sum "$WORK/v1.jsonl" | cut -d' ' -f1)" = "$HASH" ]

say "upload fixtures/recall-example/run.trec (multipart) as a background job"
show "curl -D - -H 'Authorization: Token …' -H 'Prefer: respond-async' -F file=@fixtures/recall-example/run.trec -F name=example $C/runs/"
code=$(curl -sS -D "$WORK/upload.headers" -o "$WORK/job.json" -w '%{http_code}' "${AUTH[@]}" \
  -H 'Prefer: respond-async' -F file=@fixtures/recall-example/run.trec -F name=example "$C/runs/")
LOCATION=$(grep -i '^location:' "$WORK/upload.headers" | tr -d '\r' | cut -d' ' -f2)
echo "HTTP $code, Location: $LOCATION ($(json '"job %d, %s" % (d["id"], d["state"])' "$WORK/job.json"))"
[ "$code" = 202 ]
for _ in $(seq 300); do
  curl -fsS "${AUTH[@]}" "$BASE$LOCATION" -o "$WORK/job.json"
  state=$(json 'd["state"]' "$WORK/job.json")
  [ "$state" = done ] || [ "$state" = failed ] && break
  sleep 0.2
done
show "curl -H 'Authorization: Token …' $BASE$LOCATION"
json '"job %d: %s (%s %s/%s); result: %s" % (d["id"], d["state"], d["phase"], d["done"], d["total"], d["result"]["api_url"])' "$WORK/job.json"
[ "$state" = done ]
curl -fsS "${AUTH[@]}" "$BASE$(json 'd["result"]["api_url"]' "$WORK/job.json")" -o "$WORK/run.json"
echo "run $(json '"%s, %s, stages %s" % (d["name"], d["source_filename"], [s["name"] for s in d["stages"]])' "$WORK/run.json"); pooled: $(json 'd["result"]["import_report"]' "$WORK/job.json")"

say "score it against v1 at k=2"
show "curl -X POST -H 'Authorization: Token …' -H 'Content-Type: application/json' -d '{\"run\": \"example\", \"snapshot\": 1, \"ks\": [2]}' $C/evaluations/"
code=$(curl -sS -o "$WORK/evaluation.json" -w '%{http_code}' -X POST "${AUTH[@]}" \
  -H 'Content-Type: application/json' -d '{"run": "example", "snapshot": 1, "ks": [2]}' \
  "$C/evaluations/")
echo "HTTP $code"
json '"snapshot v%d sha256:%s..., stage %s, unjudged policy %s" % (d["snapshot"]["number"], d["snapshot"]["content_hash"][:12], d["stage"], d["params"]["unjudged"])' "$WORK/evaluation.json"
json '"counts: %s" % d["counts"]' "$WORK/evaluation.json"
json '"R@2: %s" % d["aggregates"]["R@2"]' "$WORK/evaluation.json"
[ "$code" = 201 ]
"$PY" - "$WORK/evaluation.json" <<'EOF'
import json, math, sys
r = json.load(open(sys.argv[1]))["aggregates"]["R@2"]
assert math.isclose(r["macro"], 4 / 9), r
assert math.isclose(r["pooled"], 2 / 5), r
print(f"macro R@2 = {r['macro']:.6f} = 4/9, pooled R@2 = {r['pooled']:.6f} = 2/5")
EOF

say "a reviewer's token is refused the upload"
show "curl -H 'Authorization: Token <reviewer>' -F file=@… -F name=mine $C/runs/"
code=$(curl -sS -o "$WORK/refused.json" -w '%{http_code}' -H "Authorization: Token $REVIEWER" \
  -F file=@fixtures/recall-example/run.trec -F name=mine "$C/runs/")
echo "HTTP $code: $(cat "$WORK/refused.json")"
[ "$code" = 403 ]

say "a stranger's token: the collection does not exist for them"
show "curl -H 'Authorization: Token <stranger>' $C/"
code=$(curl -sS -o "$WORK/stranger.json" -w '%{http_code}' -H "Authorization: Token $STRANGER" "$C/")
echo "HTTP $code: $(cat "$WORK/stranger.json")"
[ "$code" = 404 ]

say "no token at all"
show "curl $C/"
code=$(curl -sS -o "$WORK/anonymous.json" -w '%{http_code}' "$C/")
echo "HTTP $code: $(cat "$WORK/anonymous.json")"
[ "$code" = 401 ]

say "all steps answered as expected"
