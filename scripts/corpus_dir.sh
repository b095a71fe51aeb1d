# Sourced by the bench scripts: exports TVIR_CORPUS_DIR, unless already set, as the
# first `shared/corpus` folder found beside the checkout or beside any folder above
# it (`../shared/corpus` for /work/main, `../../shared/corpus` for a worktree under
# /work/wt/), so the scripts work from any checkout. Run from the package root.
if [ -z "${TVIR_CORPUS_DIR:-}" ]; then
    dir="$(pwd)"
    while [ "$dir" != "/" ]; do
        dir="$(dirname "$dir")"
        if [ -d "$dir/shared/corpus" ]; then
            TVIR_CORPUS_DIR="$dir/shared/corpus"
            break
        fi
    done
    # Not found: the benches say so and skip.
    TVIR_CORPUS_DIR="${TVIR_CORPUS_DIR:-$(pwd)/../shared/corpus}"
fi
export TVIR_CORPUS_DIR
