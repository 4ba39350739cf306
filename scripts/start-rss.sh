#!/usr/bin/env bash
# Memory of `npm start` as a newcomer sees it: a fresh data dir, the first start, the README's
# quickstart funnel (lead, card payment, upsell, complete, refund) three times and the demo page,
# then the server process's RSS and peak RSS from /proc (Linux). Ports 3950/3951 unless set.
#
#   bash scripts/start-rss.sh              # npm start (its memory-lean Node flags)
#   START=start:fast bash scripts/start-rss.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PORT=${PORT:-3950} SANDBOX_PORT=${SANDBOX_PORT:-3951}
DIR=$(mktemp -d) LOG=$(mktemp)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR" "$LOG"' EXIT
CHECKSTAND_DATA_DIR=$DIR PORT=$PORT SANDBOX_PORT=$SANDBOX_PORT npm run -s "${START:-start}" >"$LOG" 2>&1 &
for _ in $(seq 180); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 1; done
PID=$(ss -ltnpH "sport = :$PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$PID" ] || { echo "start-rss: the server did not start:"; cat "$LOG"; exit 1; }
rss() { grep -E "^$1:" "/proc/$PID/status" | awk '{printf "%d MB", $2/1024}'; }
echo "after start: RSS $(rss VmRSS)"
TOKEN=$(grep -o 'csk_[A-Za-z0-9_]*' "$LOG" | head -1)
for _ in 1 2 3; do TOKEN=$TOKEN BASE_URL=http://127.0.0.1:$PORT CHECKSTAND_DATA_DIR=$DIR bash scripts/quickstart.sh >/dev/null; done
curl -sf "http://127.0.0.1:$PORT/demo" >/dev/null
sleep 2
echo "after the demo funnel (3 quickstarts): RSS $(rss VmRSS), peak $(rss VmHWM)  (npm run ${START:-start}, pid $PID)"
