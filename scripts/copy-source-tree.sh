#!/bin/sh
# Copy ferry's source tree SRC into the directory DEST, without build
# directories: the tracked and new files (git's ignores); or, out of a git
# checkout, everything but the usual build directories.  For
# scripts/package.sh and tests/debian-package.sh's autopkgtest run.
set -eu
src=$1 dest=$2
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard | tar -c --null -T -)
else
    tar -c -C "$src" --exclude='./build*' --exclude='./obj-*' --exclude=./bench/.build .
fi | tar -x -C "$dest"
