#!/bin/sh
# Runs contain's benchmarks; each reports medians of interleaved runs and
# the ratio against its baseline. Usage: bench/run.sh [count]
set -eu
cd "$(dirname "$0")/.."
n=${1:-200}
go test -run '^$' -bench 'Startup' -benchtime "${n}x" ./bench
go test -run '^$' -bench 'Close' -benchtime "$((n / 4 + 1))x" ./bench
# A command that forks 200 times: bare, with every layer, with tracking alone.
go test -run '^$' -bench 'Tracking' -benchtime "$((n / 10 + 1))x" ./bench
# 1,000 tagged sleepers each: ps against procps, then reap of all of them.
go test -run '^$' -bench 'Ps' -benchtime "$((n / 5 + 1))x" ./bench
go test -run '^$' -bench 'Reap' -benchtime "$((n / 40 + 1))x" ./bench
# Windows start-up under Wine (skipped where Wine is not installed).
go test -run '^$' -bench 'StartupWine' -benchtime "$((n / 10 + 1))x" ./bench
