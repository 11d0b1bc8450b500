#!/usr/bin/env bash
# Checks the layering: a folder of the library includes headers of the
# folders below it and never of one above (models > layers > optim >
# datasets > kernels > core), nor gcn.h.  Prints each include that breaks
# the rule; exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
rank() {
    case "$1" in
        core) echo 0 ;; kernels) echo 1 ;; datasets) echo 2 ;; optim) echo 3 ;;
        layers) echo 4 ;; models) echo 5 ;; *) echo -1 ;;
    esac
}
bad=0
while IFS= read -r f; do
    from=$(rank "${f%%/*}")
    dir=$(dirname "$f")
    while IFS= read -r inc; do
        # as the compiler finds it: next to the file, else from the root (-I.)
        if [ -e "$dir/$inc" ]; then path=$(realpath -m --relative-to=. "$dir/$inc"); else path=$inc; fi
        to=$(rank "${path%%/*}")
        if [ "$path" = gcn.h ] || [ "$to" -gt "$from" ]; then
            echo "check-layers: $f includes $path" >&2
            bad=1
        fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find core kernels datasets optim layers models -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
[ "$bad" = 0 ] && echo "check-layers: no include runs up a folder"
exit "$bad"
