# shellcheck shell=bash
# Shell helpers shared by the demo, e2e and docs scripts (sourced).

# start_server DB LOG: run `udgam-ci serve` on DB in the background, logging
# to LOG, and wait until it says where it listens. Sets server_pid and
# server_url. The address is $DEMO_ADDR (default 127.0.0.1:0, any free port).
start_server() {
	local db=$1 log=$2
	: >"$log" # exists before the server starts, for the loop below
	"${UDGAM_CI:-bin/udgam-ci}" serve --db "$db" --addr "${DEMO_ADDR:-127.0.0.1:0}" --log-text 2>"$log" &
	server_pid=$!
	server_url=
	local _
	for _ in $(seq 200); do
		server_url=$(sed -n 's/.*msg=serving addr=\([^ ]*\).*/http:\/\/\1/p' "$log" || true)
		[ -n "$server_url" ] && return 0
		if ! kill -0 "$server_pid" 2>/dev/null; then
			cat "$log" >&2
			echo "the report server did not start (log above)" >&2
			return 1
		fi
		sleep 0.1
	done
	cat "$log" >&2
	echo "the report server did not say where it listens within 20 s (log above)" >&2
	return 1
}

# stop_server: stop the server start_server started, and wait for it.
stop_server() {
	if [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null; then
		wait "$server_pid" 2>/dev/null || true
	fi
	server_pid=
}

# http_get URL: print the body, failing on an HTTP error.
http_get() {
	if command -v curl >/dev/null; then
		curl -fsS "$1"
	else
		wget -qO- "$1"
	fi
}

# run_id RUNFILE: the run id in a run file's header (its first line).
run_id() {
	head -n 1 "$1" | grep -o '"id":"[^"]*"' | head -n 1 | cut -d'"' -f4
}
