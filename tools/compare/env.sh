# Sourced by the tools/compare/*.sh scripts (which set $script to their
# name first, and need_pyg=no when they run no PyTorch): the settings they
# share, the checks that the bundle and PyTorch Geometric are there, and
# host_info.  Sets run to the bundle's launcher.
OUT=${OUT:?set OUT to a directory for the results}
BUNDLE=${BUNDLE:-build/bundle}
DATA=${DATA:-../shared/data}
PYTHON=${PYTHON:-python3}

run="$BUNDLE/run"
if [ ! -x "$run" ] || [ ! -x "$BUNDLE/gcntrain" ]; then
    echo "$script: no bundle in $BUNDLE (run 'make bundle' first)" >&2
    exit 2
fi
if [ "${need_pyg:-yes}" != no ] &&
    ! "$PYTHON" -c 'import numpy, torch, torch_geometric' 2>/dev/null; then
    echo "$script: $PYTHON cannot import numpy, torch and torch_geometric" >&2
    exit 2
fi

# host_info: the GPU, the driver, the PyTorch and PyG versions and the date.
host_info() {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
    "$PYTHON" -c 'import torch, torch_geometric as g
print("torch", torch.__version__, "cuda", torch.version.cuda, "torch_geometric", g.__version__)' 2>&1
    date -u
}
