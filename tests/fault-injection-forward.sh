#!/usr/bin/env bash
# The forwarding scenarios (-l LISTEN TARGET) with ferry under fault
# injection, accept4 included: every client's bytes arrive intact, and
# ferry's exit codes and messages stay what the scenarios expect.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fault.sh"
# The faults, not the volume, are the point: 16 MiB per client.
export FERRY_TEST_FORWARD_MIB=16
# All of them in the plain build; in the deferred-unref and sanitizer
# builds, which run the scenarios themselves anyway, two of them.
if [ -n "${FERRY_TEST_PLAIN:-}" ]; then
    run_with_faults forward-one-connection forward-tcp forward-16-clients-both-ways \
        forward-worker-threads forward-max-connections forward-sigterm-drain
else
    run_with_faults forward-one-connection forward-16-clients-both-ways
fi
