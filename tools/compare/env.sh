# Sourced by the tools/compare/*_arxiv.sh scripts (which set $script to their
# name first): the settings they share and the checks that the bundle and
# PyTorch Geometric are there.  Sets run to the bundle's launcher.
OUT=${OUT:?set OUT to a directory for the results}
BUNDLE=${BUNDLE:-build/bundle}
DATA=${DATA:-../shared/data}
PYTHON=${PYTHON:-python3}

run="$BUNDLE/run"
if [ ! -x "$run" ] || [ ! -x "$BUNDLE/gcntrain" ]; then
    echo "$script: no bundle in $BUNDLE (run 'make bundle' first)" >&2
    exit 2
fi
if ! "$PYTHON" -c 'import numpy, torch, torch_geometric' 2>/dev/null; then
    echo "$script: $PYTHON cannot import numpy, torch and torch_geometric" >&2
    exit 2
fi
