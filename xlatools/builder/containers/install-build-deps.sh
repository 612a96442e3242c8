#!/bin/sh
# Installs what a jaxlib build needs on a Debian/Ubuntu base; run by the Dockerfiles
# here during `docker build` (as root). Arguments come from the build args:
#   $1 PYTHON_VERSION  suffix of the apt python package that runs build/build.py
#   $2 TOOLCHAIN       apt packages of the C++ toolchain (word list, may be empty)
#   $3 EXTRA_PACKAGES  further apt packages (word list, may be empty)
# A non-empty /tmp/xlatools/xlatools-ca.crt (the profile's ca_bundle) joins the
# system trust store, which also feeds Java's (bazel's) when ca-certificates-java is there.
set -eu
python_version="$1" toolchain="$2" extra="$3"
if [ -s /tmp/xlatools/xlatools-ca.crt ]; then
  mkdir -p /usr/local/share/ca-certificates
  cp /tmp/xlatools/xlatools-ca.crt /usr/local/share/ca-certificates/xlatools-ca.crt
fi
apt-get update
# shellcheck disable=SC2086 # word lists on purpose
apt-get install -y --no-install-recommends \
  ca-certificates git patch unzip zip "python${python_version}" $toolchain $extra
update-ca-certificates
rm -rf /var/lib/apt/lists/* /tmp/xlatools
# The build runs as the invoking user's uid:gid, which has no home in the image
# (xlatools mounts one at /xlatools/home); /tmp must be writable for everyone.
chmod 1777 /tmp
