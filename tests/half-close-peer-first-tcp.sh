#!/usr/bin/env bash
# A server that replies, half-closes first and then reads on (tcp): ferry
# keeps uploading until stdin's EOF, directly and through -l LISTEN TARGET
# (see half_close_peer_first in lib.sh).
. "$(dirname "$0")/lib.sh"
half_close_peer_first tcp
