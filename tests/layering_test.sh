#!/usr/bin/env bash
# The arrows between areas, checked on the sources: every #include "swift/<area>/..." in src/<a>/ and
# include/swift/<a>/ must name area <a> itself or one its libraries link (directly or through others), as CMake
# declares them (BUILD_DIR/area_dependencies.txt, written by cmake/SwiftLinkCheck.cmake). The link checks catch
# the same at link time; this names the file and line.  Usage: layering_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC="$1"
DEPS="$2/area_dependencies.txt"
[ -f "$DEPS" ] || { echo "FAIL: no $DEPS (configure with CMake first)"; exit 1; }
declare -A area_of links
while read -r library area rest; do
  area_of[$library]="$area"
  links[$library]="$rest"
done < "$DEPS"
# The areas a library reaches, itself included.
reach() {
  local seen=" $1 " queue=("$1") lib next
  while [ ${#queue[@]} -gt 0 ]; do
    lib="${queue[0]}"
    queue=("${queue[@]:1}")
    for next in ${links[$lib]:-}; do
      case "$seen" in *" $next "*) ;; *) seen="$seen$next "; queue+=("$next") ;; esac
    done
  done
  for lib in $seen; do echo "${area_of[$lib]:-}"; done | sort -u
}
declare -A allowed
for library in "${!area_of[@]}"; do
  area="${area_of[$library]}"
  allowed[$area]="$(printf '%s\n' ${allowed[$area]:-} $(reach "$library") | sort -u | tr '\n' ' ')"
done
fail=0 checked=0
for area in "${!allowed[@]}"; do
  for dir in "$SRC/src/$area" "$SRC/include/swift/$area"; do
    [ -d "$dir" ] || continue
    while IFS=: read -r file line text; do
      used="$(sed -n 's|.*#include "swift/\([a-z_]*\)/.*|\1|p' <<<"$text")"
      [ -n "$used" ] || continue
      checked=$((checked + 1))
      case " ${allowed[$area]} " in
        *" $used "*) ;;
        *) echo "FAIL ${file#$SRC/}:$line: area '$area' includes '$used', which its libraries do not link (allowed: ${allowed[$area]})"; fail=$((fail + 1)) ;;
      esac
    done < <(grep -rn '#include "swift/' "$dir" --include='*.h' --include='*.cpp' --include='*.cu')
  done
done
echo "layering: $checked includes checked, $fail across a missing arrow"
[ "$checked" -gt 0 ] && [ "$fail" = 0 ]
