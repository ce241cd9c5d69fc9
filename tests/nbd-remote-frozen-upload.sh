#!/usr/bin/env bash
# nbd-remote-frozen-link's upload with the default keepalive, in a test of
# its own (each frozen copy waits about a minute).
FROZEN_WAYS=up-default
. "$(dirname "$0")/nbd-remote-frozen-link.sh"
