# Sourced by the setup scripts that write gigabytes (setup-pypi, setup-keras): refuse before
# writing, with one line naming the folder, what it needs and what is free, rather than leave
# pip's "[Errno 28] No space left on device" and a half-made venv.
#
#   need_space WHO DIR GIB WHAT HINT   exit 1 when DIR's file system (DIR or the nearest folder
#                                      above it that exists) has under GIB GiB free
need_space() {
  local who="$1" dir="$2" gib="$3" what="$4" hint="$5" probe free_kib
  probe="$dir"
  while [ ! -d "$probe" ]; do probe="$(dirname "$probe")"; done
  free_kib="$(df -Pk "$probe" | awk 'NR == 2 { print $4 }')"
  if [ -n "$free_kib" ] && [ "$free_kib" -lt $((gib * 1024 * 1024)) ]; then
    printf '%s: %s needs about %s GiB free; %s has %s GiB (free some space, or name another disk: %s)\n' \
      "$who" "$what" "$gib" "$probe" "$(awk -v k="$free_kib" 'BEGIN { printf "%.1f", k / 1048576 }')" \
      "$hint" >&2
    exit 1
  fi
}
