#!/usr/bin/env bash
# Regenerates docs/cli.md from the binary's own help (the flag tables are the single source).
#   scripts/gen_cli_docs.sh [path/to/swift] > docs/cli.md
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SWIFT="${1:-$ROOT/build/bin/swift}"
echo "# Command-line reference"
echo
echo "Generated from the flag tables by \`scripts/gen_cli_docs.sh\`; a test fails when it is out of date."
echo
echo '```'
"$SWIFT" --help
echo '```'
for cmd in $("$SWIFT" --help | awk '/^commands:/{on=1;next} on && /^  [a-z]/{print $1} on && /^$/{on=0}'); do
  echo
  echo "## swift $cmd"
  echo
  echo '```'
  "$SWIFT" "$cmd" --help
  echo '```'
done
