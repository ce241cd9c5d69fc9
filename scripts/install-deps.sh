#!/bin/sh
# The single list of Debian 12 packages that ferry needs to build, test and
# benchmark.  Every entry point (README commands, .ci/run) goes through here.
# Installs only what is missing, so a second run costs one dpkg query.
set -eu

PACKAGES="
  gcc meson ninja-build pkg-config
  libglib2.0-dev libssh-dev libnbd-dev libssl-dev libzstd-dev zstd
  clang libclang-rt-14-dev
  coreutils procps psmisc iproute2 strace time openssl
  socat netcat-openbsd ncat rsync
  tinyproxy microsocks dante-server
  nbdkit libnbd-bin qemu-utils
  openssh-server openssh-client
  libvirt-daemon libvirt-clients
  systemd
  build-essential debhelper dpkg-dev fakeroot lintian autopkgtest libssl-dev
  bash-completion util-linux universal-ctags valgrind liburing-dev
  python3-matplotlib
"

missing=
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages:$missing (run as root to install them)" >&2
    exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Don't let package scripts start daemons (sshd, libvirtd) on the host: tests
# start their own private instances.
policy=/usr/sbin/policy-rc.d
created_policy=
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created_policy=1
fi
apt-get install -y -qq --no-install-recommends $missing
[ -n "$created_policy" ] && rm -f "$policy"
exit 0
