#!/usr/bin/env bash
# Make dev_pagoda.txt.const (the values of the constants dev_pagoda.txt
# names, for amd64) from include/uapi/drm/pagoda_drm.h, the way syzkaller's
# syz-extract would from a configured kernel tree: a C program that
# includes the header prints each one.
#   usage: tests/syzkaller/gen-const.sh   (rewrites the file beside it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
names=$(grep -v '^#' "$here/dev_pagoda.txt" | sed 's/\$[A-Za-z0-9_]*//g' | grep -oE '\b[A-Z][A-Z0-9_]{2,}\b' | sort -u)
# and the number of each system call it describes
names+=" $(grep -oE '^[a-z0-9_]+\$' "$here/dev_pagoda.txt" | tr -d '$' | sort -u | sed 's/^/__NR_/')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	echo '#include <fcntl.h>'
	echo '#include <stdio.h>'
	echo '#include <sys/syscall.h>'
	echo '#include <uapi/drm/pagoda_drm.h>'
	echo 'int main(void) {'
	for n in $names; do
		echo "	printf(\"$n = %llu\\n\", (unsigned long long)($n));"
	done
	echo '	return 0; }'
} >"$tmp/const.c"
gcc -I"$root/include" -I/usr/include/libdrm -o "$tmp/const" "$tmp/const.c"
{
	echo "# Made by tests/syzkaller/gen-const.sh from include/uapi/drm/pagoda_drm.h."
	echo "arches = amd64"
	"$tmp/const" | sort
} >"$here/dev_pagoda.txt.const"
