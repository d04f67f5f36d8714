#!/usr/bin/env bash
# Search latency on an existing collection under two server configurations, alternated, side by side in one run:
#   default  PostgreSQL's own defaults (shared_buffers 128MB, effective_cache_size 4GB, no huge pages);
#   rds      what RDS's default parameter group sets on an instance class above medium: shared_buffers a quarter of
#            the memory, effective_cache_size half of it, huge pages on (reserved here through vm.nr_hugepages).
#
#   bench/server-settings-ab.sh COLLECTION [ORDER] [QUERIES] [PROBE FLAGS…]
#   e.g. bench/server-settings-ab.sh ai4rag_m1 "rds default rds default" 60 --packs
#
# Needs root and the server ../shared/tools/pg-with-pgvector started (its PGVECTOR_* lines in the environment,
# PGVECTOR_DATADIR among them): the server is restarted for each configuration, and left with PostgreSQL's defaults
# (huge pages released) at the end. Each configuration gets one unmeasured `--probe` (its buffers warmed as a
# serving database's would be), then the measured one, which prints the server's settings with its figures.
set -euo pipefail
COLLECTION=${1:?usage: bench/server-settings-ab.sh COLLECTION [ORDER] [QUERIES] [PROBE FLAGS…]}
ORDER=${2:-rds default rds default}
QUERIES=${3:-60}
shift $(( $# < 3 ? $# : 3 ))
: "${PGVECTOR_DATADIR:?set PGVECTOR_DATADIR (printed by ../shared/tools/pg-with-pgvector)}"
: "${PGVECTOR_PORT:?set PGVECTOR_PORT}"
[ "$(id -u)" = 0 ] || { echo "server-settings-ab: needs root (it restarts the server and reserves huge pages)" >&2; exit 2; }
PGCTL=/usr/lib/postgresql/15/bin/pg_ctl
OPTS="-p $PGVECTOR_PORT -c listen_addresses=127.0.0.1 -k $PGVECTOR_DATADIR"
MEM_MB=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
# Restarts the server with these options, after reserving $1 huge pages (0 releases them).
restart() {
  su postgres -c "$PGCTL stop -D '$PGVECTOR_DATADIR' -m fast -w" > /dev/null
  echo "$1" > /proc/sys/vm/nr_hugepages
  su postgres -c "$PGCTL start -D '$PGVECTOR_DATADIR' -w -l '$PGVECTOR_DATADIR/ab.log' -o '$OPTS $2'" > /dev/null
}
trap 'restart 0 "" || true' EXIT
cd "$(dirname "$0")/.."
for cfg in $ORDER; do
  case "$cfg" in
    rds)
      sb=$((MEM_MB / 4))
      # 2 MiB pages for the buffers and PostgreSQL's other shared memory (about 5 % more, and 64 pages).
      restart $((sb * 105 / 100 / 2 + 64)) \
        "-c shared_buffers=${sb}MB -c effective_cache_size=$((MEM_MB / 2))MB -c huge_pages=on" ;;
    default) restart 0 "-c huge_pages=off" ;;
    *) echo "server-settings-ab: a configuration is rds or default, got \"$cfg\"" >&2; exit 2 ;;
  esac
  echo "== $cfg ($(date +%T))"
  npm run -s bench -- --probe "$COLLECTION" --queries "$QUERIES" "$@" > /dev/null
  npm run -s bench -- --probe "$COLLECTION" --queries "$QUERIES" "$@" | tail -n +2
done
