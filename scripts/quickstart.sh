#!/usr/bin/env bash
# The README's quickstart as one script, against a running `npm start`: a lead, a card payment on
# the sandbox, a one-click upsell, Complete Order, a partial refund — one readable line per answer —
# then what it just made (the order, its transactions, fulfillment and timeline).
#
#   TOKEN=csk_… bash scripts/quickstart.sh            # the token npm start printed
#   BASE_URL=http://127.0.0.1:3000 (default from PORT)  CHECKSTAND_DATA_DIR=./data (where demo.json is)
#   RAW=1 also prints each answer's JSON, pretty-printed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BASE_URL=${BASE_URL:-http://127.0.0.1:${PORT:-3000}}
DEMO=${CHECKSTAND_DATA_DIR:-./data}/demo.json
if [ -z "${TOKEN:-}" ]; then
  echo "quickstart: set TOKEN to the API token npm start printed (lost it? npx checkstand token create --team <team_id>)" >&2
  exit 1
fi
if [ ! -f "$DEMO" ]; then
  echo "quickstart: no $DEMO: run npm start first (it seeds the demo on an empty data dir)" >&2
  exit 1
fi

demo() { node -p "require('$(realpath "$DEMO")')$1"; }
CAMPAIGN=$(demo .campaign_id)
OFFER=$(demo .offers.serum)
UPSELL=$(demo ".upsells.find((u) => u.step === 2).upsell_id")
LAST=$(mktemp)
trap 'rm -f "$LAST"' EXIT

# call METHOD PATH [BODY] [extra curl args…]: the answer's JSON goes to $LAST, its status to $STATUS.
call() {
  local method=$1 path=$2 body=${3:-}
  shift 3 || shift $#
  local args=(-s -o "$LAST" -w '%{http_code}' -X "$method" "$BASE_URL$path" -H "Authorization: Bearer $TOKEN")
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' -d "$body"); fi
  STATUS=$(curl "${args[@]}" "$@") || { echo "quickstart: $BASE_URL is not answering: is npm start running?" >&2; exit 1; }
  if [ "${RAW:-}" = 1 ]; then node -e "console.log(JSON.stringify(JSON.parse(require('fs').readFileSync('$LAST','utf8')), null, 2))"; fi
}

# show LABEL JS: one line: the label, the HTTP status, and what the JS expression (over `b`, the answer) says.
show() {
  node -e "
    const b = JSON.parse(require('fs').readFileSync('$LAST', 'utf8'));
    const money = (n) => '\$' + (n / 100).toFixed(2);
    const line = b.success === false ? b.message + (b.error ? ' (' + b.error.code + (b.error.decline_code ? ', ' + b.error.decline_code : '') + ')' : '') : ($2);
    console.log('$1'.padEnd(22) + '$STATUS  ' + line);
  "
}

echo "Checkstand quickstart against $BASE_URL (campaign $CAMPAIGN)"
echo

call POST /checkout/leads "{\"campaign_id\":\"$CAMPAIGN\",\"customer\":{\"email\":\"ada+$RANDOM@example.com\",\"first_name\":\"Ada\",\"last_name\":\"Lovelace\"},\"products\":[{\"offer_id\":\"$OFFER\",\"quantity\":1}]}"
show '1. Create Lead' "'order ' + b.data.order_number + ', ' + b.data.status + ', total ' + money(b.data.total)"
ORDER=$(node -p "JSON.parse(require('fs').readFileSync('$LAST','utf8')).data.order_number")

call POST /checkout/orders/payment "{\"order_number\":\"$ORDER\",\"billing\":{\"line1\":\"1 Main St\",\"city\":\"Springfield\",\"country\":\"US\"},\"payment\":{\"card_number\":\"4111111111111111\",\"card_exp\":\"12/30\",\"card_cvv\":\"123\"}}" -H "Idempotency-Key: pay-$ORDER"
show '2. Process Payment' "b.message + ' ' + b.data.payment_status + ', transaction ' + b.data.transaction_id"

call POST /checkout/orders/upsell "{\"order_number\":\"$ORDER\",\"upsell_id\":\"$UPSELL\",\"quantity\":1}"
show '3. One-click upsell' "b.message + ' ' + b.data.lines.length + ' lines, total ' + money(b.data.total)"

call POST /checkout/orders/complete "{\"order_number\":\"$ORDER\"}"
show '4. Complete Order' "b.message + ' status ' + b.data.status"

call POST "/v1/orders/$ORDER/refunds" '{"amount":500,"reason":"goodwill"}'
show '5. Refund \$5.00' "b.message + ' refunded ' + money(b.data.refunded_total ?? b.data.amount ?? 500)"

echo
echo "What it just made:"
call GET "/v1/orders/$ORDER"
show '   the order' "b.data.order_number + ' ' + b.data.status + '/' + b.data.payment_status + ', ' + b.data.lines.map((l) => l.name).join(' + ') + ', total ' + money(b.data.total) + ', refunded ' + money(b.data.refunded_total)"
show '   its timeline' "(b.data.events ?? []).map((e) => e.type).join(', ')"
call GET "/v1/transactions?order_number=$ORDER"
show '   its transactions' "b.data.map((t) => t.id + ' ' + t.type + ' ' + money(t.amount) + ' ' + t.status).join('; ')"
call GET "/v1/fulfillments?order_number=$ORDER"
show '   its fulfillments' "b.data.map((f) => f.id + ' ' + f.status).join('; ') || 'none'"
call GET "/v1/orders?limit=5"
show '   latest orders' "b.data.map((o) => o.order_number + ' ' + o.status).join('; ')"
