#!/usr/bin/env bash
# A short libFuzzer run over the address parser, every form and the ssh://
# parameters (fuzz/address-fuzz.c), seeded with fuzz/address-seeds.txt,
# each seed as-is and with a libvirt URI's read-only flag.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fuzz.sh"

fuzz_build fuzz/address-fuzz.c src/transport/address.c src/transport/virt-uri.c src/common/error.c src/common/suggest.c src/common/message.c
fuzz_seed_lines "$FERRY_SOURCE_ROOT/fuzz/address-seeds.txt" 000
fuzz_seed_lines "$FERRY_SOURCE_ROOT/fuzz/address-seeds.txt" 001
fuzz_run -dict="$FERRY_SOURCE_ROOT/fuzz/address.dict"
