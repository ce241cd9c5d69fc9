#!/usr/bin/env bash
# A short libFuzzer run over the libvirt URI mapping (fuzz/virt-uri-fuzz.c),
# seeded with the URIs of fuzz/address-seeds.txt, each read-write with
# XDG_RUNTIME_DIR set and read-only with neither XDG variable.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fuzz.sh"

fuzz_build fuzz/virt-uri-fuzz.c src/transport/virt-uri.c src/common/error.c
grep -E '^[a-z+]+://' "$FERRY_SOURCE_ROOT/fuzz/address-seeds.txt" | grep -v '^ssh://' > "$T/uris"
fuzz_seed_lines "$T/uris" 002
fuzz_seed_lines "$T/uris" 001
fuzz_run -dict="$FERRY_SOURCE_ROOT/fuzz/address.dict"
