#!/bin/sh
# Builds bench-c/fluentgo/fluentgo offline from Debian's fluent-logger-golang
# sources (apt-get install golang-go golang-github-fluent-fluent-logger-golang-dev).
#   bench-c/fluentgo/build.sh OUTPUT
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
[ -d /usr/share/gocode/src/github.com/fluent/fluent-logger-golang ] ||
    { echo "build.sh: no fluent-logger-golang sources in /usr/share/gocode" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/fluentgo"
cp "$here/main.go" "$work/src/fluentgo/"
cd "$work/src/fluentgo"
GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" go build -o "$out" .
