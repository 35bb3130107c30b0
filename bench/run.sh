#!/bin/sh
# Runs contain's benchmarks; each reports medians of interleaved runs and
# the ratio against its baseline. Usage: bench/run.sh [count]
set -eu
cd "$(dirname "$0")/.."
n=${1:-200}
go test -run '^$' -bench 'Startup' -benchtime "${n}x" ./bench
go test -run '^$' -bench 'Close' -benchtime "$((n / 4 + 1))x" ./bench
