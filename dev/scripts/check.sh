#!/usr/bin/env bash
# `npm run check`: the typecheck and the lint side by side (they share nothing), then both exit codes.
# The typecheck is one tsc process for most of its time and the lint mostly biome and knip, so on two
# cores the pair takes about as long as the typecheck alone (npm test runs this before the tests).
set -uo pipefail
npm run -s typecheck &
typecheck=$!
npm run -s lint
lint=$?
wait "$typecheck"
typecheck=$?
[ "$typecheck" = 0 ] || echo "check: the typecheck failed (exit $typecheck)" >&2
[ "$lint" = 0 ] || echo "check: the lint failed (exit $lint)" >&2
[ "$typecheck" = 0 ] && [ "$lint" = 0 ]
