#!/usr/bin/env bash
# Build kadmit the way deploy/docker/Dockerfile does, without a Docker engine: in a Debian
# root of the image's release made with debootstrap, from the Dockerfile's own package lists.
# Then check that the runtime stage installs every library the binary links (ldd mapped to
# that release's packages by its own dpkg), and run the unit tests there with that release's
# compiler. Not part of CI: the root takes several minutes to fetch (about 300 MB).
#
#   scripts/check-image-root.sh [ROOT]     ROOT defaults to /var/tmp/kadmit-image-root, kept
#                                          between runs (delete it to start afresh)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="${1:-/var/tmp/kadmit-image-root}"
dockerfile=deploy/docker/Dockerfile
text="$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$dockerfile")"

# The build stage's base image names the release (debian:<release>).
release="$(grep -m1 -oE '^FROM debian:[a-z]+' <<<"$text" | cut -d: -f2)"
build_pkgs="$(awk '/^FROM /{n++} n==1 && /apt-get install/' <<<"$text" |
    sed -E 's/.*apt-get install//; s/&&.*//' | tr ' ' '\n' | grep -v '^-' | grep . | sort -u)"
run_pkgs="$(awk '/^FROM /{n++} n==2 && /apt-get install/' <<<"$text" |
    sed -E 's/.*apt-get install//; s/&&.*//' | tr ' ' '\n' | grep -v '^-' | grep . | sort -u)"
echo "release $release; build stage: $(echo $build_pkgs); runtime stage: $(echo $run_pkgs)"

command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
if [[ ! -x "$root/usr/bin/cmake" ]]; then
    debootstrap --variant=minbase --include="$(echo $build_pkgs | tr ' ' ','),libcmocka-dev,python3" \
        "$release" "$root" http://deb.debian.org/debian
fi
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT
rm -rf "$root/src" && mkdir -p "$root/src"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$root/src"
chroot "$root" bash -euo pipefail -c '
    cd /src
    gcc --version | head -1
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKADMIT_WERROR=ON >/dev/null
    cmake --build build --target kadmit
    ./build/kadmit --version
    cmake -S . -B build-tests -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKADMIT_WERROR=ON >/dev/null
    cmake --build build-tests
    # Not here: the check of the generated codecs against the specs (it needs the pinned
    # kafka-clients jar; CI runs it) and the reclaim timing test (flaky on a busy machine).
    ctest --test-dir build-tests -j2 -E "reclaim|protocol_generated_up_to_date" --output-on-failure'

# Every library the release binary links directly (its NEEDED entries; the packages of their own
# dependencies come with them), as that release's packages.
direct="$(chroot "$root" readelf -d /src/build/kadmit | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p')"
needed="$(chroot "$root" bash -c 'ldd /src/build/kadmit' |
    sed -nE 's/^\s*([^ ]+) => (\/[^ ]+).*/\1 \2/p' | grep -E "^($(echo $direct | tr ' ' '|')) " |
    cut -d' ' -f2 |
    while read -r lib; do
        real="$(chroot "$root" readlink -f "$lib")"
        for p in "$lib" "$real" "${real#/usr}"; do
            if owner="$(chroot "$root" dpkg -S "$p" 2>/dev/null)"; then
                echo "${owner%%:*}"
                break
            fi
        done
    done | sort -u | grep -vx libc6)"
missing="$(comm -23 <(echo "$needed") <(echo "$run_pkgs"))"
if [[ -n "$missing" ]]; then
    echo "the runtime stage lacks: $missing" >&2
    exit 1
fi
echo "the runtime stage installs every library kadmit links: $(echo $needed)"
