#!/usr/bin/env bash
# Installs ge into a temporary prefix and builds a program against it twice: with CMake's
# find_package(ge) and with pkg-config.  Usage: tests/install/run.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
cmake -S "$here/consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
cmake --build "$tmp/cm" > /dev/null
out=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cm/consumer")
[ "$out" = "2 4 6" ] || { echo "install test: find_package consumer printed '$out'"; exit 1; }
libdir=$(dirname "$(find "$tmp/prefix" -name ge.pc | head -1)")
PKG_CONFIG_PATH="$libdir" cc -std=c11 "$here/consumer/main.c" -o "$tmp/pc" $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs ge)
out=$(LD_LIBRARY_PATH="$(dirname "$libdir")" "$tmp/pc")
[ "$out" = "2 4 6" ] || { echo "install test: pkg-config consumer printed '$out'"; exit 1; }
echo "install test: OK (find_package(ge) and pkg-config ge consumers build and run)"
