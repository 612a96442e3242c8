#!/usr/bin/env bash
# Build the offline Debian base image the container tests use (images cannot be
# pulled on these machines). Idempotent: an existing image is reused.
#
#   scripts/make-test-base-image.sh [NAME:TAG]
#
# NAME:TAG defaults to $XLATOOLS_TEST_BASE_IMAGE or xlatools-test-base:bookworm.
# The Debian mirror comes from $XLATOOLS_DEBIAN_MIRROR, else from the host's apt
# sources (/etc/apt/sources.list.d/*, /etc/apt/sources.list).
set -euo pipefail

image="${1:-${XLATOOLS_TEST_BASE_IMAGE:-xlatools-test-base:bookworm}}"
suite="${XLATOOLS_DEBIAN_SUITE:-bookworm}"

if ! docker info >/dev/null 2>&1; then
  echo "error: no Docker engine answers; start one (e.g. 'dockerd > /tmp/dockerd.log 2>&1 &')" >&2
  exit 3
fi
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "base image $image already present; reusing it"
  exit 0
fi
for tool in debootstrap tar; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (apt-get install -y $tool)" >&2; exit 3; }
done

mirror_from_host() {
  # deb822 files: "URIs: <url>"; one-line files: "deb [opts] <url> <suite> ...".
  # The first non-security archive wins.
  local files=(/etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list)
  local f
  for f in "${files[@]}"; do
    [ -r "$f" ] || continue
    awk '
      /^[[:space:]]*#/ { next }
      tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i; next }
      $1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { print $i; break } }
    ' "$f"
  done | grep -v -- '-security' | head -n 1
}
mirror="${XLATOOLS_DEBIAN_MIRROR:-$(mirror_from_host)}"
if [ -z "$mirror" ]; then
  echo "error: no Debian mirror found in the host's apt sources; set XLATOOLS_DEBIAN_MIRROR" >&2
  exit 2
fi

root="$(mktemp -d /tmp/xlatools-base.XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "==> debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -n 30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# Keep apt's package lists out of the image; containers run apt-get update themselves.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
echo "==> docker import -> $image"
tar -C "$root" -c . | docker import - "$image" >/dev/null
echo "base image $image ready"
