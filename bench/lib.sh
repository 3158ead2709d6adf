# Shared by the bench/ scripts (sourced): the statistics they print and a clock.
# median V...: the median of the numbers given.
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# now: wall-clock seconds with nanoseconds; sub A B: A - B.
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a - b }'; }
