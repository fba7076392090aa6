#!/usr/bin/env bash
# clang-format check over kadmit's own C sources. Generated code is excluded:
# protocol/generated/ and the generated_* sample files are laid out by
# protocol/gen/generate.py itself and checked by protocol/gen/check.sh.
#   scripts/check-format.sh         report files that differ, exit 1 if any
#   scripts/check-format.sh --fix   reformat them in place
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

fix=0
[[ "${1:-}" == "--fix" ]] && fix=1
command -v clang-format >/dev/null || { echo "check-format.sh: clang-format not found" >&2; exit 1; }

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h')
else
    mapfile -t files < <(find . -name '*.[ch]' -not -path './build*' -printf '%P\n' | sort)
fi

checked=0
bad=()
for f in "${files[@]}"; do
    [[ -f "$f" ]] || continue
    case "$f" in
        build*/* | */generated/* | */generated_* | generated_*) continue ;;
    esac
    checked=$((checked + 1))
    if [[ $fix -eq 1 ]]; then
        clang-format -i --style=file "$f"
    elif ! clang-format --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
        bad+=("$f")
    fi
done

if [[ ${#bad[@]} -gt 0 ]]; then
    echo "check-format.sh: ${#bad[@]} of $checked files need clang-format (scripts/check-format.sh --fix):"
    printf '  %s\n' "${bad[@]}"
    exit 1
fi
echo "check-format.sh: $checked files formatted"
