#!/bin/sh
# Builds bench-c/goplugin/relay (the peer of bench-c/relay) from Debian's
# go-plugin 1.0.1 sources, offline (apt-get install golang-go
# golang-github-hashicorp-go-plugin-dev golang-google-grpc-dev
# golang-goprotobuf-dev golang-golang-x-net-dev):
#   - vlogbench101: the package as Debian ships it;
#   - vlogbenchchanged: the same with go-plugin's later change to its stderr
#     relay: nothing parsed while the logger is off, and a JSON line's level
#     checked before its fields are flattened.
# Each copy gets one file more, hook.go, that runs the unexported relay
# (Client.logStderr) on a reader. GOPATH mode: the copies sit inside a copy
# of the go-plugin tree, so that its internal packages may be imported.
#   bench-c/goplugin/build.sh OUTPUT
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
src=/usr/share/gocode/src/github.com/hashicorp/go-plugin
[ -f "$src/client.go" ] || { echo "build.sh: no go-plugin sources in $src" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree=$work/src/github.com/hashicorp/go-plugin
mkdir -p "$work/src/github.com/hashicorp" "$work/src/vlogbench"
cp -r "$src" "$tree"
for copy in vlogbench101 vlogbenchchanged; do
    mkdir "$tree/$copy"
    cp "$tree"/*.go "$tree/$copy/"
    rm "$tree/$copy"/*_test.go
    cp "$here/hook.go" "$tree/$copy/"
done
python3 - "$tree/vlogbenchchanged/client.go" <<'PY'
import sys
path = sys.argv[1]
s = open(path).read()
skip = """\t\tc.config.Stderr.Write([]byte{'\\n'})

\t\tentry, err := parseJSON(line)"""
assert skip in s, "the line before parseJSON"
s = s.replace(skip, """\t\tc.config.Stderr.Write([]byte{'\\n'})

\t\t// The change: a logger that is off costs no parsing.
\t\tif !enabled(l, hclog.Error) {
\t\t\tcontinue
\t\t}

\t\tentry, err := parseJSON(line)""")
flatten = """\t\t\tout := flattenKVPairs(entry.KVPairs)

\t\t\tout = append(out, "timestamp", entry.Timestamp.Format(hclog.TimeFormat))
\t\t\tswitch hclog.LevelFromString(entry.Level) {"""
assert flatten in s, "the flattening"
s = s.replace(flatten, """\t\t\t// The change: the level before the fields are flattened.
\t\t\tlevel := hclog.LevelFromString(entry.Level)
\t\t\tif !enabled(l, level) {
\t\t\t\tcontinue
\t\t\t}
\t\t\tout := flattenKVPairs(entry.KVPairs)

\t\t\tout = append(out, "timestamp", entry.Timestamp.Format(hclog.TimeFormat))
\t\t\tswitch level {""")
open(path, "w").write(s)
PY
cp "$here/relay.go" "$work/src/vlogbench/"
cd "$work/src/vlogbench"
GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" go build -o "$out" .
